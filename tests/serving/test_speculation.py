"""A run's speculative accept length from its own requests (sglang's per-request figures)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pytest_rocm_llm.client.completions import GreedyGeneration, failed, parse_generate
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



# meta_info of one speculative /generate answer as sglang releases wrote it: 0.5.23
# (tokenizer_manager._calculate_spec_decoding_metrics), an earlier 0.5.x (accepted drafts as
# spec_accept_token_num), and a build reporting the accept length alone. 60 tokens in 20
# verify steps, 40 drafts accepted, EAGLE 5/1/6 (5 drafts proposed per step).
META_0_5_23 = {"completion_tokens": 60, "spec_verify_ct": 20, "spec_num_correct_drafts": 40,
               "spec_num_proposed_drafts": 100, "spec_accept_rate": 0.4,
               "spec_accept_length": 3.0}
META_EARLIER = {"completion_tokens": 60, "spec_verify_ct": 20, "spec_accept_token_num": 40,
                "spec_draft_token_num": 100, "spec_accept_rate": 0.4,
                "spec_accept_length": 3.0}
META_LENGTH_ONLY = {"completion_tokens": 60, "spec_accept_length": 3.0}


@pytest.mark.parametrize("meta", [META_0_5_23, META_EARLIER, META_LENGTH_ONLY],
                         ids=["0.5.23", "earlier-0.5.x", "accept-length-only"])
def test_every_meta_info_spelling_gives_the_same_accept_length(meta: dict) -> None:
    g = parse_generate({"output_ids": list(range(60)), "meta_info": meta})
    assert (g.spec_verify_ct, g.accept_length, g.spec_conflict) == (20, 3.0, None)


def test_meta_info_fields_that_disagree_say_so() -> None:
    g = parse_generate({"output_ids": list(range(60)), "meta_info": {
        **META_0_5_23, "spec_accept_length": 4.0}})
    assert g.spec_conflict == ("verify steps by meta_info field disagree beyond 2%: "
                               "spec_verify_ct 20, spec_accept_length 15, "
                               "spec_num_correct_drafts 20")


# /metrics of a sglang 0.5.23 server (observability/metrics_collector.py): counters per label
# set, here two DP ranks and streaming apart; prometheus_client writes *_total samples.
EXPOSITION = """\
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{dp_rank="0",is_streaming="false",model_name="glm"} 600.0
sglang:generation_tokens_total{dp_rank="1",is_streaming="true",model_name="glm"} 300.0
# HELP sglang:generation_tokens_created Number of generation tokens processed.
# TYPE sglang:generation_tokens_created gauge
sglang:generation_tokens_created{dp_rank="0",is_streaming="false",model_name="glm"} 1.7e9
# HELP sglang:spec_verify_calls_total Number of speculative decoding verification calls.
# TYPE sglang:spec_verify_calls_total counter
sglang:spec_verify_calls_total{dp_rank="0",model_name="glm"} 200.0
sglang:spec_verify_calls_total{dp_rank="1",model_name="glm"} 100.0
# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.
# TYPE sglang:spec_accept_length gauge
sglang:spec_accept_length{dp_rank="0",model_name="glm"} 2.5
"""


def test_sglang_prometheus_counters_sum_every_label_set() -> None:
    assert speculation.sglang_counters(EXPOSITION) == SpecCounters(900.0, 300.0)
    no_spec = "\n".join(ln for ln in EXPOSITION.splitlines() if "spec_verify" not in ln)
    assert speculation.sglang_counters(no_spec + "\n") is None


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
    for name in ("speculation.py",):
        assert not [m for m in runtime_imports(package / name) if m.startswith(upper)], name
