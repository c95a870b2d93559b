"""Do long-context prompts fit the server's context window?

Twice: when suite.toml is loaded, against the context-length flag of the profile that runs
the evaluation on each of the suite's targets (a length it cannot hold is a usage error
before any server starts); and before the first request, against the limit the running
server reports (or, failing that, the model's config.json), which also covers a profile
that sets no context length and so takes the model's own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_rocm_llm.config.targets import TARGETS, FlagValue
from pytest_rocm_llm.config.toml import Table

if TYPE_CHECKING:
    from pytest_rocm_llm.client.completions import Endpoint
    from pytest_rocm_llm.config.suite import Suite

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
# Where Hugging Face configs put the trained context, in the order sglang's
# get_context_length reads them.
CONTEXT_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                "max_position_embeddings")
# A server that cannot list its models in this long will not serve the evaluation either.
PROBE_TIMEOUT_S = 30.0
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
    """Every long_context eval's lengths fit the profile that runs it, on every target of
    the suite (targets can override the eval and the profile's flags)."""
    for tname in suite.targets:
        target = TARGETS[tname]
        for name in suite.evals:
            config = suite.eval_for(name, target)
            if config.kind != "long_context":
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


def model_context(model_dir: str | Path) -> tuple[str, int] | None:
    """(key, tokens) of the model's trained context from its config.json; None if
    unreadable. Multimodal configs nest it in ``text_config``."""
    try:
        cfg = json.loads((Path(model_dir) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict):
        return None
    for c in (cfg.get("text_config"), cfg):
        if isinstance(c, dict):
            for key in CONTEXT_KEYS:
                if isinstance(c.get(key), int) and not isinstance(c.get(key), bool):
                    return key, c[key]
    return None


def served_context(endpoint: Endpoint) -> int | None:
    """``max_model_len`` from the server's ``GET /v1/models`` (sglang and vLLM both report
    the context they enforce there); None if it does not say."""
    import httpx  # here: loading a suite (which imports this module) stays light

    from pytest_rocm_llm.http import sync_client

    try:
        with sync_client(endpoint.base_url.rstrip("/"), timeout_s=PROBE_TIMEOUT_S,
                         headers=endpoint.headers) as client:
            r = client.get("/v1/models")
        data: Any = r.json().get("data") if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    cards = [c for c in data or () if isinstance(c, dict)]
    card = next((c for c in cards if c.get("id") == endpoint.model), cards[0] if cards else {})
    value = card.get("max_model_len")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def check_served(name: str, lengths: tuple[int, ...], max_tokens: int, endpoint: Endpoint,
                 model_dir: str | Path) -> None:
    """Raise ConfigProblem before the first request when a length cannot fit the running
    server's context."""
    from pytest_rocm_llm.serving.launch import ConfigProblem  # here: launch imports config

    served = served_context(endpoint)
    trained = model_context(model_dir)
    if served is not None:
        limit = served
        source = (f"the server reports max_model_len {served} on GET /v1/models (the "
                  "profile's context length, or when it sets none the model's own")
        source += f": {trained[0]} = {trained[1]} in config.json)" if trained else ")"
    elif trained is not None:
        limit = trained[1]
        source = (f"the server does not report its context, so the model's {trained[0]} = "
                  f"{trained[1]} in {Path(model_dir) / 'config.json'} is the limit")
    else:
        return  # nothing to judge by: the server's own error names the problem
    # /generate is sglang's native API; the OpenAI one is how vLLM profiles are spoken to
    engine = "sglang" if endpoint.api == "generate" else "vllm"
    over = [n for n in lengths if needed(n, max_tokens, engine) > limit]
    if over:
        raise ConfigProblem(
            f"long-context eval {name!r}: length {max(over)} + max_tokens {max_tokens} does "
            f"not fit the server's context of {limit} tokens; {source}. Lower the lengths "
            f"(evals.{name}.lengths), or set the profile's context length (sglang "
            "context-length, vLLM max-model-len) within what the model was trained for")
