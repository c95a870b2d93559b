"""Kernel-path evidence from a server log: which attention backends, MoE kernels and
all-reduce the server actually ran, and how many tuned-config lookups hit or missed.

Two builds can pass the same checks on different kernel paths (an aiter tuned config that
became a default, a custom all-reduce that fell back to NCCL); this evidence says which path
a measurement was taken on. Only the log's own words count: a field the log does not show is
None, never a guess. Wordings are sglang 0.5.23's (``server_args=`` dump, attention backend
setup, ``[AR]`` lines of device_communicators/custom_all_reduce.py and parallel_state.py, the
Triton MoE config lookup) and aiter's (``[fused_moe]`` and tuned-GEMM lookups).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_rocm_llm.serving.signatures import load

# Every TP rank logs the same lookup; a lookup is counted once, by its message.
_PREFIX = re.compile(r"^\[\d{4}-\d\d-\d\d [^\]]*\]\s*(\[aiter\]\s*)?")
_SERVER_ARGS = re.compile(r"server_args=\{.*\}")
_HYBRID_ATTENTION = re.compile(r"Using hybrid attention backend for decode and prefill: "
                               r"decode_backend=(\w+), prefill_backend=(\w+)")

# Tuned-config hits, in each library's words; misses are the untuned-fallback signatures.
_HITS = {
    "triton": re.compile(r"Using MoE kernel config from "),
    "aiter": re.compile(r"\[fused_moe\] using [12]stage( xbf16)? \(kernelName1="),
    "aiter-gemm": re.compile(r"shape is .*found padded_M: .* is tuned on cu_num"),
}
_MISS_SIGNATURES = ("moe-untuned-fallback", "aiter-moe-heuristic-fallback",
                    "aiter-moe-default-kernel", "aiter-gemm-untuned")
_MOE_KERNELS = {
    "aiter": re.compile(r"\[fused_moe\] "),
    "triton": re.compile(r"MoE kernel config|Fallback to triton version"),
}

# Later evidence wins: a fallback is logged after the attempt it replaces.
_ALL_REDUCE = (
    ("aiter-custom", re.compile(r"\[AR\] Using AiterCustomAllreduce")),
    ("sglang-custom-v2", re.compile(r"\[AR\] Using CustomAllReduceV2|All Reduce config: "
                                    r"symmetric_memory")),
    ("sglang-custom", re.compile(r"\[AR\] Aiter custom all-reduce not available")),
    ("nccl", re.compile(r"\[AR\] All-reduce call path: NCCL|Setup Custom allreduce failed")),
)


def _arg(line: str, key: str) -> Any:
    """One value of the ``server_args={...}`` dump: a string, a number, a bool or None."""
    m = re.search(rf"'{key}': (?:'(?P<text>[^']*)'|(?P<word>None|True|False)|"
                  rf"(?P<number>-?\d+(?:\.\d+)?))", line)
    if m is None:
        return None
    if m["text"] is not None:
        return m["text"]
    if m["word"] is not None:
        return {"None": None, "True": True, "False": False}[m["word"]]
    return float(m["number"]) if "." in m["number"] else int(m["number"])


def kernel_paths(text: str) -> dict[str, Any]:
    """The kernel-path evidence of one server log, as a plain dict."""
    lines = text.splitlines()
    args = next((m.group(0) for line in lines if (m := _SERVER_ARGS.search(line))), "")
    attention = _arg(args, "attention_backend")
    prefill = _arg(args, "prefill_attention_backend") or attention
    decode = _arg(args, "decode_attention_backend") or attention
    all_reduce = None
    if args and _arg(args, "tp_size") == 1:
        all_reduce = "none"
    elif args and _arg(args, "disable_custom_all_reduce") is True:
        all_reduce = "nccl"
    misses = [s.pattern for s in load() if s.id in _MISS_SIGNATURES]
    hits: set[str] = set()
    missed: set[str] = set()
    moe: set[str] = set()
    for line in lines:
        if (m := _HYBRID_ATTENTION.search(line)) is not None:
            decode, prefill = m.group(1), m.group(2)
        for name, pattern in _ALL_REDUCE:
            if pattern.search(line):
                all_reduce = name
        message = _PREFIX.sub("", line).strip()
        if any(p.search(message) for p in _HITS.values()):
            hits.add(message)
        elif any(p.search(message) for p in misses):
            missed.add(message)
        moe.update(name for name, p in _MOE_KERNELS.items() if p.search(message))
    return {
        "attention_prefill_backend": prefill,
        "attention_decode_backend": decode,
        "moe_runner_backend": _arg(args, "moe_runner_backend"),
        "moe_kernels": sorted(moe),
        "all_reduce": all_reduce,
        "tuned_config_hits": len(hits),
        "tuned_config_misses": len(missed),
    }


# Counts depend on which shapes ran before the evidence was read; only starting or stopping
# to hit (or miss) the tuned tables is a change of path. Labels are the note's words.
_COUNTS = {"tuned_config_hits": "tuned-config hits", "tuned_config_misses": "tuned-config misses"}


def _shown(value: Any) -> str:
    return ", ".join(value) if isinstance(value, list) else str(value)


def kernel_path_note(baseline: Mapping[str, Any], run: Mapping[str, Any]) -> str | None:
    """What changed between the kernel paths of a baseline's provenance and a run's, as one
    line; None when nothing comparable differs. Only keys both logs showed count: a missing
    or None field is absent evidence, not a change. A note, never a verdict: the gate judges
    the numbers, this says which path they were taken on."""
    old, new = baseline.get("kernel_paths") or {}, run.get("kernel_paths") or {}
    changes = []
    for key, was in old.items():
        now = new.get(key)
        if was is None or now is None or was == now:
            continue
        if key in _COUNTS:
            if (was == 0) != (now == 0):
                changes.append(f"{_COUNTS[key]} {was} -> {now}")
        else:
            changes.append(f"{key} {_shown(was) or 'none'} -> {_shown(now) or 'none'}")
    return "kernel path changed since the baseline: " + "; ".join(changes) if changes else None
