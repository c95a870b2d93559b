"""Is the server running what its profile asked for? Each flag the profile set, against the
value the engine resolved and reports (issue 15 item 1).

InferenceX's perf changelog (PR #1266): a launcher silently dropped ``--ep-size``; a sweep
passed GSM8K at 0.93 and the real EP=8 run scored 0.0000. A flag the engine accepted (its own
parser checked it before launch) can still be dropped or rewritten during resolution, so the
check reads the running server back.

sglang 0.5.23's ``/server_info`` returns ``ServerArgs.resolved_dict()``: every field, snake
case, with each resolution decision applied over the launcher's input
(``resolution_result``: "Read the last declaration, then raw input, then the declared
fallback"), plus ``version`` and ``internal_states``. vLLM serves no resolved arguments, so
its servers are "not verifiable", said out loud rather than passed.

No pytest in here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from pytest_rocm_llm.config.targets import FlagValue
from pytest_rocm_llm.redact import is_secret_name

# Flags that are the checks of issue 15 item 1 (parallel sizes, speculation, KV cache dtype,
# attention and MoE backends, context length): set by a profile but absent from the server's
# report is a failure, not a shrug. Field names (after aliases), as fnmatch patterns.
MUST_REPORT = ("tp_size", "dp_size", "ep_size", "speculative_*", "kv_cache_dtype",
               "attention_backend", "*_attention_backend", "moe_runner_backend",
               "moe_a2a_backend", "context_length")

# Option strings whose field is not the snake case of the flag, from sglang 0.5.23's parser
# (ServerArgs.add_cli_args; each action's option_strings -> dest).
ALIASES = {
    "model": "model_path",                        # ['--model-path', '--model']
    "nccl-init-addr": "dist_init_addr",           # ['--dist-init-addr', '--nccl-init-addr']
    "tensor-parallel-size": "tp_size",            # ['--tp-size', '--tensor-parallel-size']
    "decode-context-parallel-size": "dcp_size",
    "pipeline-parallel-size": "pp_size",
    "data-parallel-size": "dp_size",
    "attention-data-parallel-size": "attn_dp_size",
    "attention-context-parallel-size": "attn_cp_size",
    "moe-data-parallel-size": "moe_dp_size",
    "grpc-http-sidecar-port": "smg_http_sidecar_port",
    "fp8-gemm-backend": "fp8_gemm_runner_backend",  # dest="fp8_gemm_runner_backend"
    "fp4-gemm-backend": "fp4_gemm_runner_backend",
    "context-bucket": "cuda_graph_prefill_max_context",
    "speculative-draft-model": "speculative_draft_model_path",
    "expert-parallel-size": "ep_size",            # ['--ep-size', '--expert-parallel-size', '--ep']
    "ep": "ep_size",
    "elastic-ep-join-mode": "ep_join_mode",
    "elastic-ep-join-rank-offset": "ep_join_rank_offset",
    "enable-hicache": "enable_hierarchical_cache",
    "hierarchical-sparse-attention-extra-config": "hisparse_config",
    # dest="enable_amd_monokernel", action=DeprecatedStoreConstAction, const_value=True
    "monokernel-backend": "enable_amd_monokernel",
}

# Flags sglang legitimately reports in another form: flag -> (field, expected value as
# reported, or None when the reported form cannot be compared to the flag's).
REWRITES: dict[str, tuple[str, Any]] = {
    # DeprecatedStoreConstAction writes const_value=True for "--monokernel-backend amd".
    "monokernel-backend": ("enable_amd_monokernel", True),
    # LoRAPathAction parses "name=path" words into LoRARef records.
    "lora-paths": ("lora_paths", None),
}

ABSENT = object()


@dataclass(frozen=True)
class Mismatch:
    """One flag whose effect the server does not show. ``fails`` is False only for a flag the
    server does not report and that is not on the must-report list."""

    flag: str
    field: str
    asked: FlagValue
    got: Any = ABSENT

    @property
    def reported(self) -> bool:
        return self.got is not ABSENT

    @property
    def required(self) -> bool:
        return any(fnmatchcase(self.field, p) for p in MUST_REPORT)

    @property
    def fails(self) -> bool:
        return self.reported or self.required

    def describe(self) -> str:
        # A credential's value is never shown, asked or reported (the one masking rule).
        secret = is_secret_name(self.flag)
        head = f"--{self.flag}{' ***' if secret else _show(self.asked)} -> {self.field}"
        if self.reported:
            got = "***" if secret else _show_got(self.got)
            return f"{head} {got} (dropped or overridden)"
        why = "required for this check" if self.required else "not verified"
        return f"{head} not reported ({why})"


def _show(value: FlagValue) -> str:
    if value is True:
        return ""
    if isinstance(value, tuple):
        return " " + " ".join(value)
    return f" {value}"


def _show_got(value: Any) -> str:
    if value is None or isinstance(value, str):
        return str(value)
    return json.dumps(value)


def field_of(flag: str) -> str:
    flag = flag.removeprefix("--")
    if flag in REWRITES:
        return REWRITES[flag][0]
    return ALIASES.get(flag, flag.replace("-", "_"))


def verify(flags: Mapping[str, FlagValue], info: Mapping[str, Any]) -> list[Mismatch]:
    """Every set flag whose resolved value in ``info`` (a ``/server_info`` answer) differs,
    or that ``info`` does not report. ``False`` flags are not on the command line and are
    not checked."""
    out: list[Mismatch] = []
    for flag, asked in flags.items():
        if asked is False:
            continue
        flag = flag.removeprefix("--")
        negated = flag.startswith("no-") and field_of(flag[3:]) in info
        name = field_of(flag[3:] if negated else flag)
        if name not in info:
            out.append(Mismatch(flag, name, asked))
            continue
        got = info[name]
        if flag in REWRITES:
            want = REWRITES[flag][1]
            if want is None or got == want:
                continue
            out.append(Mismatch(flag, name, asked, got))
            continue
        # BooleanOptionalAction: "--no-x" sets x to False.
        expected: FlagValue = False if negated and asked is True else asked
        if not same(expected, got):
            out.append(Mismatch(flag, name, asked, got))
    return out


def failures(mismatches: list[Mismatch]) -> list[Mismatch]:
    return [m for m in mismatches if m.fails]


def same(asked: FlagValue, got: Any) -> bool:
    """Whether the resolved value ``got`` is what the flag value ``asked`` means. The flag
    side is what suite.toml holds (bool, int, float, str, tuple of words); the server side
    is JSON from the resolved dataclass (a float field reports 3600 as 3600.0, a list field
    a list, a JSON-valued flag a parsed object)."""
    if asked is True or asked is False:
        return got is asked
    if isinstance(asked, tuple):
        if not isinstance(got, list) or len(got) != len(asked):
            return False
        return all(same(a, g) for a, g in zip(asked, got, strict=True))
    if got is None or isinstance(got, bool):
        # a store-true field can also take "true"/"false" words; None means not in effect
        return isinstance(asked, str) and got is not None and asked.lower() == str(got).lower()
    if isinstance(got, (int, float)):
        try:
            number: float | None = float(asked)
        except ValueError:
            number = _human_int(str(asked))
        if number is None:
            return False
        return math.isclose(number, float(got), rel_tol=1e-9, abs_tol=0.0)
    if isinstance(got, str):
        return str(asked) == got
    if isinstance(asked, str):
        try:
            return bool(json.loads(asked) == got)
        except ValueError:
            return False
    return False


def _human_int(text: str) -> float | None:
    """sglang's human_readable_int (utils/common.py), used by --context-length and
    --max-total-tokens: "Supports standard SI suffixes (k, M, G, T) and IEC suffixes (Ki, Mi,
    Gi, Ti). Suffixes are case-sensitive." ('1k' -> 1000, '1Ki' -> 1024)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", text.strip())
    if match is None:
        return None
    number, suffix = match.groups()
    scale = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
             "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}[suffix]
    return float(number) * scale


def describe(suite: str, profile: str, engine: str, version: str, suite_file: object,
             mismatches: list[Mismatch]) -> str:
    """The failure message for the mismatches that fail (``fails``)."""
    bad = failures(mismatches)
    return (f"{suite}/{profile}: {engine} {version} is not running what the profile asked for: "
            + "; ".join(m.describe() for m in bad)
            + f". Fix the profile's flags in {suite_file} (the server log says why {engine} "
              "rewrote them), or pin the engine build that honours them.")


NOT_VERIFIABLE = "not verifiable"
