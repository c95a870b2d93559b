"""The baseline flow end to end, through pytester runs of a real suite attached
(--llm-endpoint) to one real CPU sglang server started for this module: a missing baseline
is written and fails; a second run passes against it; --llm-update-baselines rewrites and
fails; --llm-regen-all rewrites and passes; a corrupt file stops the run naming the file;
xdist -n 2 over two suites writes each baseline exactly once and loses none; the results
file and the verdict table carry every check."""

from __future__ import annotations

import json

import pytest

from tests.conftest import SMOKE_MODEL

pytestmark = pytest.mark.engine

SUITE = """
[suite]
name = "{name}"
{model}
[profiles.default]

[workloads.decode]
kind = "single_stream"
input_tokens = 32
output_tokens = 8
requests = 3
warmup = 1
seed = {seed}

[checks.speed]
workload = "decode"
metric = "output_speed_tok_s"
min = 0.5
source = "flow test floor"
# Shared 2-core machines: runs of one build differ by far more than a run's own spread.
baseline_tolerance = 0.9

[checks.ttft]
workload = "decode"
metric = "ttft_p50_s"
max = 60
source = "flow test ceiling"
baseline = "none"

[checks.ok]
workload = "decode"
metric = "success_ratio"
min = 1.0
source = "every request must succeed"
baseline_tolerance = 0.0
"""

TESTS = "def test_check(llm_check, llm_judge):\n    llm_judge(llm_check)\n"


@pytest.fixture
def run(pytester: pytest.Pytester, suite_dir, cpu_server, reference_model_dir):
    for i, name in enumerate(("alpha", "beta")):
        suite_dir(SUITE.format(name=name, model=SMOKE_MODEL, seed=i),
                  {f"test_{name}.py": TESTS}, name=name)
    pytester.makeini("[pytest]\n")

    def go(*args: str, subprocess: bool = False) -> pytest.RunResult:
        argv = ["--rocm-target", "cpu", "--llm-endpoint", cpu_server,
                "--llm-model-path", str(reference_model_dir), "-p", "no:cacheprovider",
                "suites", *args]
        return (pytester.runpytest_subprocess if subprocess else pytester.runpytest)(*argv)

    return go


def stored(pytester: pytest.Pytester, suite: str) -> dict:
    return json.loads((pytester.path / "baselines" / "cpu" / f"{suite}.json").read_text())


def test_update_flow(pytester: pytest.Pytester, run):
    first = run("-k", "alpha")
    first.assert_outcomes(passed=1, failed=2)  # ttft has no baseline gate
    first.stdout.fnmatch_lines(["*no baseline yet; recorded*", "*rocm-llm verdicts*",
                                "*alpha*cpu*default*", "*NEW (recorded)*",
                                "*rocm-llm baselines written*", "*alpha.json: speed: new*"])
    data = stored(pytester, "alpha")
    assert set(data["metrics"]) == {"speed", "ok"}
    speed = data["metrics"]["speed"]
    assert speed["n"] == 3 and speed["spread"] is not None and speed["gate"]["tolerance"] == 0.9
    prov = speed["provenance"]
    assert prov["kind"] == "measured" and prov["engine"] == "sglang"
    assert prov["engine_version"] == "0.5.23" and prov["engine_flags_digest"].startswith("sha256:")
    assert prov["model"] == "HuggingFaceTB/SmolLM2-135M-Instruct" and prov["host"]

    second = run("-k", "alpha", "--llm-results", "results.json")
    second.assert_outcomes(passed=3)
    second.stdout.fnmatch_lines(["*speed*tok/s*PASS*"])
    results = json.loads((pytester.path / "results.json").read_text())
    assert results["counts"] == {"pass": 3}
    assert {v["check"] for v in results["verdicts"]} == {"speed", "ttft", "ok"}
    assert all(v["artifacts"]["records_csv"].endswith(".csv") for v in results["verdicts"])

    before = (pytester.path / "baselines" / "cpu" / "alpha.json").read_text()
    update = run("-k", "alpha", "--llm-update-baselines")
    update.assert_outcomes(passed=1, failed=2)
    update.stdout.fnmatch_lines(["*baseline updated*", "*alpha.json: speed: * -> *"])
    assert (pytester.path / "baselines" / "cpu" / "alpha.json").read_text() != before

    regen = run("-k", "alpha", "--llm-regen-all")
    regen.assert_outcomes(passed=3)


def test_broken_baseline_is_named_and_kept(pytester: pytest.Pytester, run):
    path = pytester.path / "baselines" / "cpu" / "alpha.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"schema_version": 1, "suite": "alpha", "target": "cpu", "metrics": {"sp')
    result = run("-k", "alpha", "--llm-regen-all")
    # Known before any check runs (a usage error at collection), not after a workload.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()
    result.stderr.fnmatch_lines([f"*{path}*not valid JSON*"])
    assert path.read_text().endswith('"sp')  # nothing overwritten


def test_xdist_writes_each_baseline_once_and_loses_none(pytester: pytest.Pytester, run):
    result = run("-n", "2", "--dist", "loadgroup", "--llm-regen-all", "--llm-results",
                 "results.json", subprocess=True)
    result.assert_outcomes(passed=6)
    lines = [line for line in result.outlines if ": new baseline" in line]
    assert sorted(lines) == sorted(set(lines)) and len(lines) == 4  # 2 suites x 2 gated checks
    for suite in ("alpha", "beta"):
        assert set(stored(pytester, suite)["metrics"]) == {"speed", "ok"}
    results = json.loads((pytester.path / "results.json").read_text())
    assert len(results["verdicts"]) == 6 and results["counts"] == {"new": 4, "pass": 2}
    leftovers = [p.name for p in (pytester.path / "baselines" / "cpu").iterdir()]
    assert sorted(leftovers) == ["alpha.json", "beta.json"]  # no temporary files
