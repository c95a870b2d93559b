"""Do long-context prompts fit the server's context window? Checked here when suite.toml is
loaded, against the context-length flag of the profile that runs the evaluation on each of
the suite's targets (a length it cannot hold is a usage error before any server starts);
correctness/context_fit.py checks again before the first request, against the running
server's own limit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pytest_rocm_llm.config.suite_model import Suite
from pytest_rocm_llm.config.targets import TARGETS, FlagValue
from pytest_rocm_llm.config.toml import Table

# The flags that bound one request's tokens, per engine. sglang refuses a request beyond
# either its context length or its KV pool (max-total-tokens); vLLM one beyond max-model-len.
LIMIT_FLAGS: dict[str, tuple[str, ...]] = {
    "sglang": ("context-length", "max-total-tokens"),
    "vllm": ("max-model-len",),
}
# Tokens the engine keeps beyond prompt + max_tokens. sglang 0.5.23's scheduler refuses an
# input of min(context, pool) - 1 - 5 tokens or more (tp_worker.py, managers/utils.py
# validate_input_length), so a prompt must stay 8 below the limit even when max_tokens is
# smaller; vLLM checks prompt + max_tokens <= max-model-len exactly.
HEADROOM = {"sglang": 8, "vllm": 0}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)([kKmMgG]?)")
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}


def flag_tokens(value: FlagValue) -> int | None:
    """A token-count flag as a number; vLLM's '32k' (10**3) / '32K' (2**10) forms too.
    None when it is not one (vLLM's -1 / 'auto': the model's own length)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value > 0 else None
    m = _SIZE.fullmatch(str(value).strip())
    return int(float(m.group(1)) * _SCALE[m.group(2)]) if m else None


def profile_limit(flags: Mapping[str, FlagValue], engine: str) -> tuple[str, int] | None:
    """(flag, tokens) of the tightest limit the profile's flags set; None: none set."""
    set_ = [(f, n) for f in LIMIT_FLAGS.get(engine, ())
            if f in flags and (n := flag_tokens(flags[f])) is not None]
    return min(set_, key=lambda fn: fn[1]) if set_ else None


def needed(length: int, max_tokens: int, engine: str) -> int:
    """Tokens of context one prompt of ``length`` with ``max_tokens`` to generate takes."""
    return length + max(max_tokens, HEADROOM.get(engine, 0))


def check_suite(suite: Suite) -> None:
    """Every eval whose prompts come at set lengths (long_context's ``lengths``) fits the
    profile that runs it, on every target of the suite (targets can override the eval and
    the profile's flags)."""
    for tname in suite.targets:
        target = TARGETS[tname]
        for name in suite.evals:
            config = suite.eval_for(name, target)
            if not getattr(config, "lengths", ()):
                continue
            profile = config.profile or suite.default_profile
            engine = suite.engine_of(profile)
            limit = profile_limit(suite.profile_for(profile, target).flags, engine)
            if limit is None:
                continue  # the model's own length: checked before the first request
            flag, tokens = limit
            over = [n for n in config.lengths if needed(n, config.max_tokens, engine) > tokens]
            if not over:
                continue
            # name the table the lengths came from: the target's override or the eval's own
            overridden = config.lengths != suite.evals[name].lengths
            where = f"targets.{tname}.evals.{name}" if overridden else f"evals.{name}"
            fits = tokens - max(config.max_tokens, HEADROOM.get(engine, 0))
            Table({}, suite.file, where).fail("lengths", (
                f"length {max(over)} does not fit profile {profile!r} on target {tname}: "
                f"{max(over)} prompt tokens + max_tokens {config.max_tokens} exceed its "
                f"{flag} of {tokens} ({engine}); use lengths of at most {fits}, or raise "
                f"{flag} in {_flag_table(suite, tname, profile, flag)} (within the model's "
                "trained context, config.json max_position_embeddings)"))


def _flag_table(suite: Suite, target: str, profile: str, flag: str) -> str:
    """Where raising ``flag`` takes effect: a target's override wins over the profile, which
    wins over the target's own engine defaults (the CPU reference's max-total-tokens)."""
    override = suite.target_profiles.get(target, {}).get(profile)
    if override is not None and flag in override.flags:
        return f"[targets.{target}.profiles.{profile}.flags]"
    return f"[profiles.{profile}.flags]"
