"""What changed between two builds besides speed: their ``/server_info`` answers diffed
(issue 14 item 3).

Upgrades flip defaults silently: vllm#36702 changed the ROCm attention backend and cost 38%
throughput on MI325X/MI355X, and it was found from an outside dashboard, not CI. sglang
0.5.23's ``/server_info`` is the resolved ``ServerArgs`` (every field, after resolution) plus
``version`` and ``internal_states`` (per scheduler: resolved limits, memory, timings), so two
builds serving the same profile can be compared field by field.

Each difference is one ``InfoChange`` with a dotted key (nested objects and lists of objects
are walked: ``cuda_graph_config.decode.max_bs``, ``internal_states.0.<field>``), ordered:
  default changed  a value differs and neither build's profile set that flag: the build
                   resolved it differently on its own (what an upgrade slips in);
  version          the engine's ``version``, and any version given beside the answer
                   (``versions_a``/``versions_b``: ROCm, aiter, torch), under ``versions.``;
  set by profile   a value differs where a profile set the flag (explained by the profiles);
  added, removed   a field only one build reports (a release added or dropped it).
Volatile fields are ignored: ports and pids, the launch line (it holds the port and paths),
timings and free memory at start-up, paths in a temp dir, and model and tokenizer paths
(each build may mount the model elsewhere). ``internal_states`` entries repeat the top-level
fields; only what they add is compared. Credentials' values are masked when shown.

No pytest in here.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Literal

from pytest_rocm_llm.redact import MASK, is_secret_name
from pytest_rocm_llm.serving.effective_config import field_of

ChangeKind = Literal["default changed", "version", "set by profile", "added", "removed"]
KIND_ORDER: tuple[ChangeKind, ...] = ("default changed", "version", "set by profile", "added",
                                      "removed")

# Dotted keys (fnmatch patterns; ``*`` crosses dots) that differ between two starts of one
# build on one node.
VOLATILE = (
    "port", "*_port", "*.port", "*_ports", "pid", "*_pid", "*.pid", "launch_command",
    "startup_time", "startup_time.*", "*.startup_time", "*.startup_time.*",
    "*.last_gen_throughput", "*.memory_usage.startup_available", "*.memory_usage.weight",
    "*timestamp*",
    "model_path", "tokenizer_path", "*_model_path",
)
# Lists whose entries (one per scheduler) repeat the top-level fields beside their own.
MIRRORS = ("internal_states",)
TEMP_DIRS = tuple(dict.fromkeys(("/tmp/", "/var/tmp/", "/var/folders/", "/dev/shm/",
                                 tempfile.gettempdir().rstrip("/") + "/")))
ENGINE_VERSION = "version"
VERSIONS = "versions"


@dataclass(frozen=True)
class InfoChange:
    key: str
    a: Any  # ABSENT when build A does not report the key
    b: Any
    kind: ChangeKind

    def describe(self) -> str:
        if self.kind == "version":
            name = "engine" if self.key == ENGINE_VERSION else self.key.split(".", 1)[-1]
            return f"{name} {_show(self.a)} -> {_show(self.b)}"
        secret = is_secret_name(self.key.rsplit(".", 1)[-1])
        a, b = (MASK if secret and v is not ABSENT else _show(v) for v in (self.a, self.b))
        return f"{self.key}: {a} -> {b}"


class _Absent:
    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Any = _Absent()


def _show(value: Any) -> str:
    if value is ABSENT:
        return "(absent)"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)


def _volatile(key: str, a: Any, b: Any) -> bool:
    if any(fnmatchcase(key, p) for p in VOLATILE):
        return True
    return any(isinstance(v, str) and v.startswith(TEMP_DIRS) for v in (a, b))


def _fields(flags: Iterable[str] | None) -> set[str]:
    out: set[str] = set()
    for flag in flags or ():
        flag = flag.removeprefix("--")
        out.add(field_of(flag))
        if flag.startswith("no-"):  # BooleanOptionalAction: --no-x sets x
            out.add(field_of(flag[3:]))
    return out


def _walk(prefix: str, a: Any, b: Any, out: list[tuple[str, Any, Any]],
          skip: frozenset[str] = frozenset()) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for k in sorted(set(a) | set(b), key=str):
            if k in skip:
                continue
            key = f"{prefix}{k}"
            va, vb = a.get(k, ABSENT), b.get(k, ABSENT)
            if _volatile(key, va, vb):
                continue
            if va is ABSENT or vb is ABSENT:
                out.append((key, va, vb))
            else:
                _walk(key + ".", va, vb, out)
        return
    if (isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and a
            and all(isinstance(x, Mapping) for x in (*a, *b))):
        for i, (x, y) in enumerate(zip(a, b)):
            _walk(f"{prefix}{i}.", x, y, out, skip)
        return
    if a != b:
        out.append((prefix.rstrip("."), a, b))


def diff_server_info(a: Mapping[str, Any], b: Mapping[str, Any], *,
                     set_flags_a: Iterable[str] | None = None,
                     set_flags_b: Iterable[str] | None = None,
                     versions_a: Mapping[str, str] | None = None,
                     versions_b: Mapping[str, str] | None = None) -> list[InfoChange]:
    """Every non-volatile difference between build A's and build B's ``/server_info``,
    changed defaults first. ``set_flags_*``: the flags each build's profile set (names as in
    suite.toml, or a profile's flags mapping); ``versions_*``: versions found beside the
    answer (``{"rocm": ..., "aiter": ..., "torch": ...}``)."""
    for side, info in (("A", a), ("B", b)):
        if not isinstance(info, Mapping):
            raise TypeError(f"build {side}'s server_info is a {type(info).__name__}, not the "
                            "JSON object /server_info returns")
    a_full = {**a, VERSIONS: {**a.get(VERSIONS, {}), **(versions_a or {})}}
    b_full = {**b, VERSIONS: {**b.get(VERSIONS, {}), **(versions_b or {})}}
    found: list[tuple[str, Any, Any]] = []
    top = frozenset(set(a) | set(b))
    mirrors = {m: (a_full.pop(m, ABSENT), b_full.pop(m, ABSENT)) for m in MIRRORS}
    _walk("", a_full, b_full, found)
    for name, (ma, mb) in mirrors.items():
        if ma is ABSENT or mb is ABSENT:
            if ma is not mb:
                found.append((name, ma, mb))
        elif isinstance(ma, list) and isinstance(mb, list) and len(ma) != len(mb):
            found.append((f"{name}.length", len(ma), len(mb)))
        else:
            _walk(name + ".", ma, mb, found, top)
    set_fields = _fields(set_flags_a) | _fields(set_flags_b)
    changes = [InfoChange(key, va, vb, _kind(key, va, vb, set_fields))
               for key, va, vb in found]
    return sorted(changes, key=lambda c: KIND_ORDER.index(c.kind))


def _kind(key: str, a: Any, b: Any, set_fields: set[str]) -> ChangeKind:
    if key == ENGINE_VERSION or key.startswith(VERSIONS + "."):
        return "version"
    if a is ABSENT:
        return "added"
    if b is ABSENT:
        return "removed"
    if key.split(".", 1)[0] in set_fields:
        return "set by profile"
    return "default changed"


def format_diff(changes: Iterable[InfoChange]) -> str:
    """The diff for the report: one line per change, grouped by kind in KIND_ORDER."""
    rows = list(changes)
    if not rows:
        return "server_info: no differences besides ports, paths and timings"
    lines = [f"server_info: {len(rows)} difference{'s' if len(rows) != 1 else ''} "
             "(changed defaults first)"]
    width = max(len(c.kind) for c in rows)
    lines += [f"  {c.kind.ljust(width)}  {c.describe()}" for c in rows]
    return "\n".join(lines)
