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


# The declared order, lowest first (README "How it works"): a module imports only its own
# layer or lower ones, at any depth (function-level and type-checking imports included: a
# deferred import is still a dependency, and a cycle through one is still a cycle). The
# top-level modules (errors, redact, ...) are the base; the package's own __init__ (the
# public names) sits above everything it re-exports.
LAYERS = ("base", "config", "serving", "client", "performance", "correctness", "verdicts",
          "report", "plugin", "api")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[tuple[str, str], int]:
    """(importer, imported) -> first line, over the package's own modules. ``from pkg import
    sub`` depends on the submodule, not on the package's __init__ (every submodule import
    runs that anyway)."""
    mods = {module_name(p, root): p for p in root.rglob("*.py") if "/stubs/" not in str(p)}
    edges: dict[tuple[str, str], int] = {}
    for name, path in mods.items():
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = here[:len(here) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else []))
                subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in mods]
                targets = subs if len(subs) == len(node.names) else [mod, *subs]
            else:
                continue
            for t in targets:
                while t not in mods and "." in t:
                    t = t.rsplit(".", 1)[0]
                if t in mods and t != name:
                    edges.setdefault((name, t), node.lineno)
    return edges


def layer_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "api"
    return parts[1] if parts[1] in LAYERS else "base"


def upward_imports(edges: dict[tuple[str, str], int]) -> list[str]:
    return [f"{a} (line {line}) imports {b}: {layer_of(a)} is below {layer_of(b)}"
            for (a, b), line in sorted(edges.items())
            if LAYERS.index(layer_of(b)) > LAYERS.index(layer_of(a))]


def import_cycles(edges: dict[tuple[str, str], int]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan's algorithm)."""
    graph: dict[str, list[str]] = {}
    for a, b in edges:
        graph.setdefault(a, []).append(b)
        graph.setdefault(b, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                cycles.append(sorted([v, *group]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_every_layer_imports_only_its_own_or_lower_ones() -> None:
    edges = import_graph(PACKAGE)
    assert len(edges) > 300  # the scan reads the package, function-level imports included
    bad = upward_imports(edges)
    assert not bad, "imports that point up the layer order:\n  " + "\n  ".join(bad)


def test_no_module_imports_itself_back() -> None:
    cycles = import_cycles(import_graph(PACKAGE))
    assert not cycles, "import cycles:\n  " + "\n  ".join(" <-> ".join(c) for c in cycles)


def test_the_scan_sees_deferred_upward_imports_and_cycles(tmp_path: Path) -> None:
    # The checker itself, on a package with one upward import inside a function and one
    # cycle through a type-checking import: both must be reported.
    pkg = tmp_path / "pkg"
    for d in ("config", "verdicts"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "config" / "a.py").write_text("def f():\n    from pkg.verdicts import b\n")
    (pkg / "verdicts" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\n")
    (pkg / "verdicts" / "c.py").write_text("from pkg.verdicts.b import X\n")
    edges = import_graph(pkg)
    assert upward_imports(edges) == [
        "pkg.config.a (line 2) imports pkg.verdicts.b: config is below verdicts"]
    assert import_cycles(edges) == [["pkg.verdicts.b", "pkg.verdicts.c"]]
