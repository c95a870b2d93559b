"""Check verdicts: preconditions first, each named; then floors with the shortfall."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_rocm_llm.config.checks import Check
from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.config.workload import Workload
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.performance.metrics import serving_metrics
from pytest_rocm_llm.performance.workloads import WorkloadResult
from pytest_rocm_llm.serving.server import LLMServer
from pytest_rocm_llm.verdicts.baselines import BaselineCache
from pytest_rocm_llm.verdicts.checks import FloorMissed, PreconditionNotMet
from pytest_rocm_llm.verdicts.judge import judge_workload
from tests.conftest import SMOKE_MODEL
from tests.performance.test_metrics import rec

W = Workload(name="agg", kind="fixed_rate", profile=None, api="generate", input_tokens=100,
             output_tokens=11, requests=10, request_rate=2.0, cache_hit=0.6)
# baseline "none": the absolute floor and the preconditions decide, no stored baseline
FLOOR = Check(name="agg_tput", workload="agg", metric="output_tok_s", min=20.0, max=None,
              source="published 2026-07", baseline="none")
SERVER = LLMServer("demo", "default", "http://127.0.0.1:1", "sglang", "m", "/m", (), {},
                   "0.5.23")


def result(records, w=W, duration=5.0) -> WorkloadResult:
    return WorkloadResult(w, records, serving_metrics(records, duration))


def judged(check: Check, res: WorkloadResult, tmp_path: Path) -> float | None:
    """The production judge, as the llm_judge fixture runs it: raises the check's failure,
    else returns the measured value."""
    suite = parse_suite(Path("suite.toml"), tomllib.loads(SUITE))
    out = judge_workload(check, res, suite, TARGETS["cpu"], SERVER, BaselineCache(tmp_path),
                         "check", {"kind": "measured"}, "id", {})
    if out.error is not None:
        raise out.error
    return out.decision.verdict.measured


def good(n=10, **kw):
    return [rec(i, 0.2, 1.2, 11, send=(i + 1) / 2.0, **kw) for i in range(n)]


def test_floor_met_returns_the_value(tmp_path: Path) -> None:
    assert judged(FLOOR, result(good()), tmp_path) == pytest.approx(22.0)


def test_floor_missed_names_value_floor_source_and_shortfall(tmp_path: Path) -> None:
    with pytest.raises(FloorMissed) as info:
        judged(replace(FLOOR, min=44.0), result(good()), tmp_path)
    first, *notes = str(info.value).splitlines()
    assert first == ("performance regression: agg_tput: output_tok_s = 22 tok/s, "
                     "floor >= 44 tok/s (published 2026-07): short by 50.0%")
    # ... followed by what the figure is made of: tokens per request and rate x tokens
    assert "  11 mean output tokens per completed request" in notes
    assert any(n.startswith("  offered: 2 req/s x 11 tokens = 22 tok/s") for n in notes)


def test_ceiling(tmp_path: Path) -> None:
    ttft = Check("ttft", "agg", "ttft_max_s", None, 0.1, "SLO", baseline="none")
    with pytest.raises(FloorMissed, match=r"ttft_max_s = 0.2 s, ceiling <= 0.1 s .*over by 100"):
        judged(ttft, result(good()), tmp_path)


def test_failed_request_is_a_precondition_not_a_verdict(tmp_path: Path) -> None:
    recs = good()
    recs[3] = rec(3, 0, 0, 11, ok=False, send=2.0)
    with pytest.raises(PreconditionNotMet, match=r"1/10 requests failed \(first: request 3: "
                                                  r"HTTP 500\)"):
        judged(replace(FLOOR, min=0.0), result(recs), tmp_path)


def test_rate_off_target_is_named(tmp_path: Path) -> None:
    slow = [rec(i, 0.2, 1.2, 11, send=(i + 1) / 1.5) for i in range(10)]
    with pytest.raises(PreconditionNotMet, match="achieved request rate 1.500 req/s is not "
                                                 "within 5% of the target 2 req/s"):
        judged(FLOOR, result(slow), tmp_path)


def test_cache_hit_off_target_is_named(tmp_path: Path) -> None:
    with pytest.raises(PreconditionNotMet, match="prefix-cache hit ratio 20.0% is not within 5 "
                                                 "points of the target 60%"):
        judged(FLOOR, result(good(cached=20)), tmp_path)


def test_short_outputs_are_named(tmp_path: Path) -> None:
    recs = good()
    recs[0].completion_tokens = 7
    with pytest.raises(PreconditionNotMet, match="1 outputs not at the forced length 11"):
        judged(FLOOR, result(recs), tmp_path)


def test_empty_run_is_not_a_pass(tmp_path: Path) -> None:
    with pytest.raises(PreconditionNotMet, match="no requests"):
        judged(replace(FLOOR, min=0.0), result([]), tmp_path)


def test_a_missing_value_is_not_judged(tmp_path: Path) -> None:
    # every request succeeded, none produced a TTFT: nothing to compare with the ceiling
    recs = good()
    for r in recs:
        r.ttft_s = None
    ttft = Check("ttft", "agg", "ttft_max_s", None, 0.1, "SLO", baseline="none")
    with pytest.raises(PreconditionNotMet, match="the run produced no ttft_max_s"):
        judged(ttft, result(recs), tmp_path)


SUITE = f"""
[suite]
name = "demo"
{SMOKE_MODEL}
[profiles.default]
[workloads.w]
kind = "fixed_rate"
input_tokens = 100
output_tokens = 10
requests = 4
request_rate = 1.0
[checks.c]
workload = "w"
metric = "output_tok_s"
min = 1
source = "test"
"""


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("request_rate = 1.0", "request_rate = -1.0", "key 'workloads.w.request_rate': -1.0 is out "
                                                  "of range: must be > 0"),
    ("request_rate = 1.0", "request_rate = 1e9", "must be <= 100000"),
    ("request_rate = 1.0", "", "a fixed_rate workload needs request_rate"),
    ('kind = "fixed_rate"', 'kind = "burst"', "'burst' is not a workload kind"),
    ("requests = 4", 'requests = "4"', "key 'workloads.w.requests': expected an integer"),
    ("requests = 4", "requests = 4\nconcurrency = 3", "key 'workloads.w.concurrency': unknown"),
    ('kind = "fixed_rate"', 'kind = "rate_sweep"\nrates = [2.0, 1.0]\nttft_slo_s = 1',
     "increasing positive rates"),
    ('kind = "fixed_rate"', 'kind = "rate_sweep"\nrates = [1.0]', "needs the TTFT SLO"),
    ('metric = "output_tok_s"', 'metric = "tokens"', "'tokens' is not a metric"),
    ('metric = "output_tok_s"', 'metric = "saturation_rate"',
     "key 'checks.c.metric': saturation_rate is measured by a rate_sweep workload; 'w' is a "
     "fixed_rate"),
    ('workload = "w"', 'workload = "x"', "key 'checks.c.workload': 'x' is not a workload"),
    ('source = "test"', "", "key 'checks.c.source': say where the number comes from"),
    ("min = 1", "", "a check needs min (a floor), max (a ceiling) or reference_score"),
    ('workload = "w"', 'workload = "w"\neval = "e"', "reads either a workload"),
    ('workload = "w"', 'eval = "e"', "key 'checks.c.eval': 'e' is not an evaluation"),
    ("min = 1", "reference_score = 0.9", "a binomial floor needs an evaluation"),
    ("min = 1", 'min = 1\nbaseline = "sideways"', "'sideways' is not a gate"),
])
def test_bad_workloads_and_checks_are_usage_errors(old: str, new: str, expected: str) -> None:
    text = SUITE.replace(old, new, 1)
    with pytest.raises(ConfigError) as info:
        parse_suite(Path("suite.toml"), tomllib.loads(text))
    assert expected in str(info.value)


def test_saturation_floor_below_the_first_step_is_a_usage_error() -> None:
    # A node that cannot hold the first step reads saturation_rate = 0; below a floor under
    # that step it might still have held the floor, so such a floor cannot be judged.
    text = SUITE.replace('kind = "fixed_rate"', 'kind = "rate_sweep"\nrates = [2.0, 3.0]\n'
                                                'ttft_slo_s = 1').replace(
        'metric = "output_tok_s"', 'metric = "saturation_rate"')
    with pytest.raises(ConfigError) as info:
        parse_suite(Path("suite.toml"), tomllib.loads(text))
    assert ("key 'checks.c.min': a saturation floor of 1 req/s is below the sweep's first "
            "rate 2 req/s") in str(info.value)
    parse_suite(Path("suite.toml"), tomllib.loads(text.replace("min = 1", "min = 2")))


def test_target_override_of_a_workload_keeps_the_rest() -> None:
    from pytest_rocm_llm.config.targets import TARGETS

    text = SUITE + "[targets.mi355x.workloads.w]\ninput_tokens = 20000\nrequest_rate = 2.4\n"
    suite = parse_suite(Path("suite.toml"), tomllib.loads(text))
    w = suite.workload_for("w", TARGETS["mi355x"])
    assert (w.input_tokens, w.request_rate, w.output_tokens, w.requests) == (20000, 2.4, 10, 4)
    assert suite.workload_for("w", TARGETS["cpu"]).input_tokens == 100


def test_each_row_names_the_build_and_image_that_measured_it(tmp_path: Path) -> None:
    # A paired run's candidate, served from its image: the row says so, beside the builds
    # table, so a dashboard reading one row knows which build it is.
    suite = parse_suite(Path("suite.toml"), tomllib.loads(SUITE))
    candidate = replace(SERVER, build="candidate")
    out = judge_workload(FLOOR, result(good()), suite, TARGETS["cpu"], candidate,
                         BaselineCache(tmp_path), "check",
                         {"kind": "measured", "container_image": "sglang:new",
                          "container_image_id": "sha256:9f",
                          "container_image_digests": "sglang@sha256:ab"}, "id", {})
    row = out.decision.verdict.to_json()
    assert (row["build"], row["image"]) == ("candidate", "sglang:new")
    # A tag can move between the run and the reading: the id and digests cannot.
    assert (row["image_id"], row["image_digests"]) == ("sha256:9f", "sglang@sha256:ab")
    plain = judge_workload(FLOOR, result(good()), suite, TARGETS["cpu"], SERVER,
                           BaselineCache(tmp_path), "check", {"kind": "measured"}, "id", {})
    assert (plain.decision.verdict.build, plain.decision.verdict.image) == ("incumbent", "")
