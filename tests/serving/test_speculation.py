"""A run's speculative accept length from its own requests (sglang's per-request figures)."""

from __future__ import annotations

import ast
from pathlib import Path

from pytest_rocm_llm.client.completions import GreedyGeneration, failed
from pytest_rocm_llm.serving import speculation
from pytest_rocm_llm.serving.speculation import SpecCounters, between, from_generations


def gen(tokens: int, verify: int | None) -> GreedyGeneration:
    return GreedyGeneration(tuple(range(tokens)), (None,) * tokens, ({},) * tokens, "length",
                            tokens, verify)


def test_per_request_figures_are_summed_not_averaged() -> None:
    # 30 tokens in 10 steps and 2 tokens in 2 steps: 32 / 12 tokens per step (a mean of the
    # two ratios, 2.0, would weigh the short request like the long one)
    c = from_generations([gen(30, 10), gen(2, 2), failed("boom"), gen(5, None)])
    assert c == SpecCounters(32.0, 12.0) and c.accept_length == 32 / 12


def test_no_figure_is_none_not_one() -> None:
    assert from_generations([gen(8, None)]) is None
    assert SpecCounters(0.0, 0.0).accept_length is None
    assert between(None, SpecCounters(5.0, 2.0)) is None
    assert between(SpecCounters(50.0, 10.0), SpecCounters(62.0, 16.0)) == SpecCounters(12.0, 6.0)



def runtime_imports(path: Path) -> set[str]:
    """Modules ``path`` imports when it runs (``if TYPE_CHECKING:`` blocks left out)."""
    out: set[str] = set()
    tree = ast.parse(path.read_text())
    skip = {id(n) for node in ast.walk(tree)
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
            for stmt in node.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_serving_modules_do_not_import_the_layers_above() -> None:
    """serving sits below client: counting speculation names a request's fields, not the
    client's class (an import upward closes a circle as the layers grow)."""
    upper = ("pytest_rocm_llm.client", "pytest_rocm_llm.performance",
             "pytest_rocm_llm.correctness")
    package = Path(speculation.__file__).parent
    for name in ("speculation.py", "context_limits.py"):
        assert not [m for m in runtime_imports(package / name) if m.startswith(upper)], name
