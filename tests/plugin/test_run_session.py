"""A run's state lives in its one session object (plugin/state.py RunSession), never in
module-level containers: two runs in one process (pytester's in-process runs, an IDE's
re-runs) must not see each other's servers or /server_info."""

from __future__ import annotations

import ast
from pathlib import Path

from pytest_rocm_llm.plugin.state import RunSession
from pytest_rocm_llm.verdicts.baselines import BaselineCache

PLUGIN = Path(__file__).resolve().parents[2] / "pytest_rocm_llm" / "plugin"
MUTABLE = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)


MUTATORS = {"setdefault", "update", "append", "extend", "add", "pop", "clear", "insert"}


def module_state(tree: ast.Module) -> list[str]:
    """Module-level containers the module changes as it runs (``_INFO = {}`` then
    ``_INFO[key] = ...`` or ``_USED.setdefault(...)``): state, not a constant table."""
    containers = set()
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, MUTABLE):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            containers |= {t.id for t in targets if isinstance(t, ast.Name)}
    changed = set()
    for node in ast.walk(tree):
        if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del)
                and isinstance(node.value, ast.Name)):
            changed.add(node.value.id)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in MUTATORS and isinstance(node.func.value, ast.Name)):
            changed.add(node.func.value.id)
    return sorted(containers & changed)


def test_the_plugin_layer_keeps_no_module_level_state() -> None:
    leaks = [f"{p.name}: {name}" for p in sorted(PLUGIN.glob("*.py"))
             for name in module_state(ast.parse(p.read_text(), str(p)))]
    assert not leaks, "run state belongs in RunSession (plugin/state.py): " + ", ".join(leaks)


def test_the_check_sees_module_level_state() -> None:
    # The check itself must find what it forbids, or it proves nothing.
    tree = ast.parse("_INFO: dict[str, int] = {}\n_USED = {}\nTABLE = ['a']\n"
                     "def f(k):\n    _INFO[k] = 1\n    _USED.setdefault(k, {})\n"
                     "    return TABLE[0], TABLE.index('a')\n")
    assert module_state(tree) == ["_INFO", "_USED"]


def test_two_sessions_share_nothing(tmp_path: Path) -> None:
    a, b = (RunSession(None, BaselineCache(tmp_path)) for _ in range(2))  # type: ignore[arg-type]
    a.server_info[("s", "p", "incumbent")] = {"version": "1"}
    a.collector.verdicts.append(object())  # type: ignore[arg-type]
    assert b.server_info == {} and b.collector.verdicts == [] and b.trial_servers == {}
