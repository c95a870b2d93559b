"""Layering: only the plugin layer imports pytest.

The domain modules (suite parsing, settings validation, baselines, the pool, the load
generator...) raise the project's own errors (``pytest_rocm_llm.errors``); the plugin layer
turns them into pytest outcomes. A domain module that imports pytest would drag it into the
pytest-free ``loadgen`` command and blur which layer decides a test's outcome.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_rocm_llm"

# The package whose job is to talk to pytest: hooks, fixtures and what they call to turn a
# run into test outcomes, reports and terminal output. Everything else is pytest-free.
PLUGIN_LAYER = "plugin/"

def imports_pytest(tree: ast.AST) -> list[int]:
    """Line numbers of every import of pytest or _pytest, at any depth (function-local
    imports load pytest just the same when the function runs)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(n.split(".")[0] in ("pytest", "_pytest") for n in names):
            lines.append(node.lineno)
    return lines


def test_only_plugin_layer_modules_import_pytest() -> None:
    leaks = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(PLUGIN_LAYER) or "/stubs/" in rel:
            continue
        for line in imports_pytest(ast.parse(path.read_text(), str(path))):
            leaks.append(f"pytest_rocm_llm/{rel}:{line}")
    assert not leaks, ("modules outside the plugin layer import pytest; raise an error from "
                       "pytest_rocm_llm.errors instead:\n  " + "\n  ".join(leaks))


def test_the_plugin_layer_is_where_pytest_is_imported() -> None:
    # The exemption must cover real modules that do import pytest, or it hides nothing.
    users = [p for p in (PACKAGE / PLUGIN_LAYER).glob("*.py")
             if imports_pytest(ast.parse(p.read_text(), str(p)))]
    assert len(users) >= 5


PYTEST_FREE = ("performance.loadgen", "serving.pool", "serving.process",
               "performance.workloads", "verdicts.baselines", "config.settings", "config.suite",
               "errors", "verdicts.judge", "serving.signatures", "config.toml", "report.plan",
               "correctness.runs", "performance.runs")


def test_domain_modules_load_without_pytest() -> None:
    """Importing them in a fresh interpreter leaves pytest unloaded (the AST scan misses
    imports made through a third-party module)."""
    code = ("import importlib, json, sys\n"
            f"for name in {PYTEST_FREE!r}:\n"
            "    importlib.import_module('pytest_rocm_llm.' + name)\n"
            "print(json.dumps(sorted(m for m in sys.modules "
            "if m.split('.')[0] in ('pytest', '_pytest'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert json.loads(out.stdout.splitlines()[-1]) == []
