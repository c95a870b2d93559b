"""Relative checks (relative_to = "<workload>"): a speed as a ratio to another workload's,
e.g. speculative decoding that must beat no speculation. Load-time validation naming file
and key; the ratio, its spread, its floor and both workloads' preconditions through the
production judge."""

from __future__ import annotations

import math
import tomllib
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.performance.metrics import serving_metrics
from pytest_rocm_llm.performance.workloads import WorkloadResult
from pytest_rocm_llm.plugin.collection import profiles_needed
from pytest_rocm_llm.serving.server import LLMServer
from pytest_rocm_llm.verdicts.baselines import BaselineCache
from pytest_rocm_llm.verdicts.checks import FloorMissed, PreconditionNotMet, measure
from pytest_rocm_llm.verdicts.judge import judge_workload
from tests.conftest import suite_head
from tests.performance.test_metrics import rec

SUITE = suite_head("demo", {"plain": {}, "spec": {}}) + """
[workloads.base]
kind = "single_stream"
input_tokens = 100
output_tokens = 11
requests = 10
[workloads.fast]
kind = "single_stream"
profile = "spec"
input_tokens = 100
output_tokens = 11
requests = 10
[workloads.agg]
kind = "fixed_rate"
input_tokens = 100
output_tokens = 11
requests = 10
request_rate = 2.0
[checks.speedup]
workload = "fast"
relative_to = "base"
metric = "output_speed_tok_s"
min = 1.0
source = "sglang PR #21272"
"""


def parse(text: str = SUITE):
    return parse_suite(Path("suites/demo/suite.toml"), tomllib.loads(text))


def test_a_relative_check_is_parsed_as_a_ratio() -> None:
    check = parse().checks["speedup"]
    assert (check.workload, check.relative_to, check.unit) == ("fast", "base", "x")


@pytest.mark.parametrize(("old", "new", "expected"), [
    ('relative_to = "base"', 'relative_to = "nope"',
     "suites/demo/suite.toml: key 'checks.speedup.relative_to': 'nope' is not a workload"),
    ('relative_to = "base"', 'relative_to = "agg"',
     "suites/demo/suite.toml: key 'checks.speedup.relative_to': 'agg' is a fixed_rate "
     "workload and 'fast' a single_stream one"),
    ('relative_to = "base"', 'relative_to = "fast"',
     "suites/demo/suite.toml: key 'checks.speedup.relative_to': 'fast' relative to itself"),
    ('metric = "output_speed_tok_s"', 'metric = "ttft_p50_s"',
     "suites/demo/suite.toml: key 'checks.speedup.metric': 'ttft_p50_s' is not a speed"),
    ('relative_to = "base"', 'relative_to = 3',
     "suites/demo/suite.toml: key 'checks.speedup.relative_to': expected a string"),
])
def test_bad_relative_checks_are_usage_errors(old: str, new: str, expected: str) -> None:
    text = SUITE.replace(old, new, 1)
    assert text != SUITE
    with pytest.raises(ConfigError) as info:
        parse(text)
    assert expected in str(info.value)


def test_a_target_override_keeps_relative_to() -> None:
    s = parse(SUITE + "[targets.cpu.checks.speedup]\nmin = 1.2\n")
    check = {c.name: c for c in s.checks_for(TARGETS["cpu"])}["speedup"]
    assert (check.relative_to, check.min) == ("base", 1.2)


def run(w, e2e: float, n: int = 10, **kw) -> WorkloadResult:
    # Sequential single-stream requests, 10 tokens after the first in (e2e - 0.2) s, with a
    # little spread so each median has a standard error.
    records = [rec(i, 0.2, e2e + 0.01 * (i % 3), 11, send=float(i), **kw) for i in range(n)]
    return WorkloadResult(w, records, serving_metrics(records, float(n)))


def judge(result: WorkloadResult, reference: WorkloadResult | None, tmp_path: Path,
          check_name: str = "speedup", **change):
    s = parse()
    check = replace(s.checks[check_name], **change)
    server = LLMServer("demo", "spec", "http://127.0.0.1:1", "sglang", "m", "/m", (), {},
                       "0.5.23")
    return judge_workload(check, result, s, TARGETS["cpu"], server, BaselineCache(tmp_path),
                          "regen", {"kind": "measured", "date": "2026-12-01"}, "id", {},
                          reference)


def test_the_value_is_the_ratio_with_a_delta_method_spread(tmp_path: Path) -> None:
    s = parse()
    fast, base = run(s.workloads["fast"], 1.2), run(s.workloads["base"], 1.45)
    out = judge(fast, base, tmp_path)
    assert out.error is None
    v = out.decision.verdict
    a, b = (measure(s.checks["speedup"], r) for r in (fast, base))
    ratio = fast.metrics["output_speed_tok_s"] / base.metrics["output_speed_tok_s"]
    assert ratio > 1.1 and v.measured == pytest.approx(ratio)
    assert a.spread and b.spread
    assert v.spread == pytest.approx(ratio * math.hypot(a.spread / a.value, b.spread / b.value))
    assert (v.unit, v.floor) == ("x", ">= 1 x")
    assert out.decision.write is not None and out.decision.write["value"] == pytest.approx(ratio)


def test_without_a_spread_on_either_side_the_ratio_has_none(tmp_path: Path) -> None:
    s = parse()
    fast = run(s.workloads["fast"], 1.2, n=1)  # one request: no standard error
    out = judge(fast, run(s.workloads["base"], 1.45), tmp_path)
    assert out.error is None and out.decision.verdict.spread is None


def test_speculation_slower_than_none_fails_naming_both_workloads(tmp_path: Path) -> None:
    s = parse()
    fast, base = run(s.workloads["fast"], 1.45), run(s.workloads["base"], 1.2)
    out = judge(fast, base, tmp_path)
    assert isinstance(out.error, FloorMissed)
    a, b = fast.metrics["output_speed_tok_s"], base.metrics["output_speed_tok_s"]
    assert a is not None and b is not None
    text = str(out.error)
    assert text.startswith(f"performance regression: speedup: output_speed_tok_s = "
                           f"{a / b:.4g} x, floor >= 1 x (sglang PR #21272): short by")
    assert f"fast: output_speed_tok_s = {a:.4g} tok/s" in text
    assert f"base: output_speed_tok_s = {b:.4g} tok/s" in text


@pytest.mark.parametrize("broken", ["fast", "base"])
def test_either_workloads_broken_precondition_is_not_a_verdict(tmp_path: Path,
                                                               broken: str) -> None:
    s = parse()
    runs = {"fast": run(s.workloads["fast"], 1.2), "base": run(s.workloads["base"], 1.45)}
    runs[broken].records[3] = rec(3, 0, 0, 11, ok=False, send=3.0)
    out = judge(runs["fast"], runs["base"], tmp_path)
    assert isinstance(out.error, PreconditionNotMet)
    assert out.decision.verdict.status == "precondition"
    assert f"  - {broken}: 1/10 requests failed" in str(out.error)
    other = "base" if broken == "fast" else "fast"
    assert f"  - {other}:" not in str(out.error)


def test_a_relative_check_needs_both_servers_kept_up() -> None:
    s = parse()
    item = SimpleNamespace(callspec=SimpleNamespace(params={"llm_check": s.checks["speedup"]}))
    assert profiles_needed(item, s, TARGETS["cpu"]) == ("spec", "plain")  # type: ignore[arg-type]


class FakeRuns:
    """The session's runs cache as run_workload_check uses it: one result per workload."""

    def __init__(self, made: dict[str, WorkloadResult], cached: dict[str, WorkloadResult]):
        self.made, self._results, self.ran = made, {("demo", k): v for k, v in cached.items()}, []

    @property
    def results(self):
        return dict(self._results)

    def get(self, suite, w, server):
        if (suite, w.name) not in self._results:
            self.ran.append((w.name, server.profile))
            self._results[(suite, w.name)] = self.made[w.name]
        return self._results[(suite, w.name)]

    def artifacts(self, suite, workload):
        return {}


def run_check(tmp_path: Path, cached: tuple[str, ...], e2e_fast: float = 1.2):
    from pytest_rocm_llm.plugin.check_context import CheckContext
    from pytest_rocm_llm.plugin.judging import run_workload_check
    from pytest_rocm_llm.plugin.state import RunSession

    s = parse()
    made = {"fast": run(s.workloads["fast"], e2e_fast), "base": run(s.workloads["base"], 1.45)}
    runs = FakeRuns(made, {k: made[k] for k in cached})
    asked: list[str] = []

    def servers(profile):
        asked.append(profile)
        return LLMServer("demo", profile, "http://127.0.0.1:1", "sglang", "m", "/m", (), {},
                         "0.5.23")

    settings = SimpleNamespace(baseline_mode="regen", container_image=None, builds=())
    ctx = CheckContext(RunSession(settings, BaselineCache(tmp_path)),  # type: ignore[arg-type]
                       s, TARGETS["cpu"], str, (OSError,))
    request = SimpleNamespace(node=SimpleNamespace(user_properties=[], nodeid="id"),
                              config=SimpleNamespace(option=SimpleNamespace()))
    value = run_workload_check(request, ctx, s.checks["speedup"], servers, runs)
    return value, asked, runs.ran, made


def test_the_runner_runs_the_reference_on_its_own_profile_first(tmp_path: Path) -> None:
    value, asked, ran, made = run_check(tmp_path, cached=())
    assert ran == [("base", "plain"), ("fast", "spec")]
    assert asked == ["plain", "spec"]
    a, b = (made[k].metrics["output_speed_tok_s"] for k in ("fast", "base"))
    assert value == pytest.approx(a / b)


def test_a_cached_reference_asks_for_no_server(tmp_path: Path) -> None:
    _, asked, ran, _ = run_check(tmp_path, cached=("base",))
    assert (asked, ran) == (["spec"], [("fast", "spec")])


def test_the_runner_fails_a_slower_speculation(tmp_path: Path) -> None:
    with pytest.raises(FloorMissed, match=r"speedup: output_speed_tok_s = 0\.\d+ x, floor >= 1"):
        run_check(tmp_path, cached=("base",), e2e_fast=1.6)


GLM52 = Path(__file__).resolve().parents[2] / "suites" / "glm52" / "suite.toml"


def test_glm52_compares_speculation_with_the_same_single_stream_without_it() -> None:
    from pytest_rocm_llm.config.suite import load_suite

    s, t = load_suite(GLM52), TARGETS["mi355x"]
    for name in ("spec_speedup", "spec_simulated_speedup"):
        check = s.checks[name]
        mine, ref = s.workload_for(check.workload, t), s.workload_for(check.relative_to, t)
        assert (check.metric, check.min, check.unit) == ("output_speed_tok_s", 1.0, "x")
        assert ref.profile == "reference" and mine.profile != "reference"
        sizes = ("kind", "api", "input_tokens", "output_tokens", "requests", "warmup", "seed")
        assert [getattr(ref, k) for k in sizes] == [getattr(mine, k) for k in sizes]
    assert s.profile_for("spec-simulated", t).env["SGLANG_SIMULATE_ACC_LEN"] == "3.61"
    assert s.profile_for("spec-simulated", t).flags == s.profile_for("spec", t).flags
    # The no-spec run costs no launch only while spec_speedup is the first check of the spec
    # profile's group (the reference server from the group before is still up).
    spec_group = [c.name for c in s.checks_for(t) if s.check_profile(c, t) == "spec"]
    assert spec_group[0] == "spec_speedup"


def test_a_builds_own_image_is_its_provenance(tmp_path: Path, runtime: str) -> None:
    """--llm-candidate-image: the candidate's values name its image, not the incumbent's, and
    the image's id and digests as the runtime reports them (a tag can move)."""
    from pytest_rocm_llm.config.builds import CANDIDATE, INCUMBENT, Build
    from pytest_rocm_llm.plugin.check_context import CheckContext
    from pytest_rocm_llm.plugin.judging import provenance_of
    from pytest_rocm_llm.plugin.state import RunSession

    settings = SimpleNamespace(container_image="given:1", container_runtime=runtime,
                               builds=(Build(INCUMBENT), Build(CANDIDATE, image="new:2")))
    ctx = CheckContext(RunSession(settings, BaselineCache(tmp_path)),  # type: ignore[arg-type]
                       parse(), TARGETS["cpu"], str, (OSError,))

    def server(build: str) -> LLMServer:
        return LLMServer("demo", "plain", "http://127.0.0.1:1", "sglang", "m", "/m", (), {},
                         "0.5.23", build=build)

    candidate = provenance_of(ctx, server(CANDIDATE))
    assert candidate["container_image"] == "new:2"
    assert candidate["container_image_id"] == "sha256:1d"
    assert candidate["container_image_digests"] == "new@sha256:d1"
    # The baseline ran natively beside a named image: no runtime id to claim for it.
    baseline = provenance_of(ctx, server(INCUMBENT))
    assert baseline["container_image"] == "given:1"
    assert "container_image_id" not in baseline
