"""A declared check that did not run to a verdict is said so: a "not judged" row with the
reason in the table and the results file; on a GPU target the run then fails unless
--llm-allow-unjudged; a broken baseline stops the run at collection, before any launch."""

from __future__ import annotations

import json

import pytest

from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.verdicts import verdict as verdicts
from pytest_rocm_llm.verdicts.verdict import Verdict
from tests.conftest import SMOKE_MODEL, suite_head

SUITE = suite_head("nj", {"default": {}}) + """
[evals.gsm8k]
kind = "gsm8k"
limit = 4
shots = 0

[checks.gsm8k_answers]
eval = "gsm8k"
metric = "invalid_rate"
max = 0.5
source = "test ceiling"
baseline = "none"

[checks.gsm8k_accuracy]
eval = "gsm8k"
metric = "accuracy"
min = 0.0
source = "test floor"
"""

TESTS = "def test_check(llm_check, llm_judge):\n    llm_judge(llm_check)\n"



def _run(pytester: pytest.Pytester, *args: str, subprocess: bool = False) -> pytest.RunResult:
    """A run whose engine interpreter leaves a mark when anything runs it (a flag check, a
    version probe or a launch), and then fails."""
    pytester.makeini("[pytest]\n")
    engine = pytester.path / "engine-python"
    engine.write_text(f"#!/bin/sh\ntouch {pytester.path / 'engine-ran'}\nexit 3\n")
    engine.chmod(0o755)
    return (pytester.runpytest_subprocess if subprocess else pytester.runpytest_inprocess)(
        "-p", "no:cacheprovider", "--rocm-target", "cpu", "--llm-engine-python", str(engine),
        "-rs", "suites", *args)


def test_missing_eval_data_is_not_judged_in_table_and_results(pytester: pytest.Pytester,
                                                               suite_dir) -> None:
    suite_dir(SUITE, {"test_nj.py": TESTS}, name="nj")
    (pytester.path / "empty").mkdir()
    result = _run(pytester, "--llm-data-dir", "empty", "--llm-results", "results.json")
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.OK  # the cpu target reports it, it does not fail
    result.stdout.fnmatch_lines(["*rocm-llm verdicts*", "*gsm8k_answers *| NOT JUDGED",
                                 "*gsm8k_accuracy *| NOT JUDGED",
                                 "*gsm8k_answers: NOT JUDGED: skipped: GSM8K test set: *"
                                 "gsm8k/test.jsonl is missing*",
                                 "*gsm8k_accuracy: NOT JUDGED: skipped: *"])
    doc = json.loads((pytester.path / "results.json").read_text())
    assert doc["counts"] == {"not-judged": 2}
    rows = {v["check"]: v for v in doc["verdicts"]}
    assert set(rows) == {"gsm8k_answers", "gsm8k_accuracy"}
    assert all(v["status"] == "not-judged" and "gsm8k/test.jsonl is missing" in v["message"]
               for v in rows.values())


def test_fixture_skip_before_judging_is_not_judged(pytester: pytest.Pytester,
                                                   suite_dir) -> None:
    # The server fixture skips (no model for this suite) before llm_judge runs: setup phase.
    suite_dir(SUITE.replace('reference = "smollm2-135m-instruct"\n', "") +
              '\n[workloads.w]\nkind = "single_stream"\ninput_tokens = 8\noutput_tokens = 2\n'
              'requests = 1\n\n[checks.speed]\nworkload = "w"\nmetric = "output_speed_tok_s"\n'
              'min = 0.1\nsource = "test"\n',
              {"test_nj.py": "def test_check(llm_check, llm_server, llm_judge):\n"
                             "    llm_judge(llm_check)\n"}, name="nj")
    result = _run(pytester, "-k", "speed", "--llm-results", "results.json")
    result.assert_outcomes(skipped=1)
    doc = json.loads((pytester.path / "results.json").read_text())
    [row] = doc["verdicts"]
    assert row["check"] == "speed" and row["status"] == "not-judged" and row["message"]
    result.stdout.fnmatch_lines(["*speed*NOT JUDGED: *"])


def test_broken_baseline_stops_at_collection_before_any_launch(pytester: pytest.Pytester,
                                                              suite_dir) -> None:
    suite_dir(SUITE, {"test_nj.py": TESTS}, name="nj")
    path = pytester.path / "baselines" / "cpu" / "nj.json"
    path.parent.mkdir(parents=True)
    broken = {"schema_version": 1, "suite": "nj", "target": "cpu", "metrics": {
        "gsm8k_accuracy": {"metric": "accuracy", "unit": "", "direction": "higher",
                           "value": "0.5", "n": 4, "spread": None, "profile": "default",
                           "gate": {"kind": "floor", "alpha": 0.01, "tolerance": 0.0},
                           "provenance": {"kind": "measured", "date": "2026-11-01"}}}}
    text = json.dumps(broken)
    path.write_text(text)
    result = _run(pytester, "--llm-data-dir", "empty")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert str(path) in err and "metrics.gsm8k_accuracy.value" in err
    assert not (pytester.path / "engine-ran").exists()  # stopped before any launch
    assert path.read_text() == text


def _v(status: str, target: str, check: str = "c") -> Verdict:
    return Verdict(suite="s", target=target, profile="p", check=check, feature="performance",
                   metric="m", unit="", status=status, message="why")  # type: ignore[arg-type]


@pytest.mark.parametrize("target, statuses, allow, fails", [
    ("mi355x", ["pass", "not-judged"], False, True),
    ("mi355x", ["pass", "not-judged"], True, False),
    ("mi355x", ["pass", "fail"], False, False),  # failures fail the run by themselves
    ("cpu", ["pass", "not-judged"], False, False),
])
def test_gpu_run_with_an_unjudged_check_fails(target, statuses, allow, fails) -> None:
    rows = [_v(s, target, f"c{i}") for i, s in enumerate(statuses)]
    message = verdicts.unjudged_failure(TARGETS[target], rows, allow)
    assert (message is not None) == fails
    if fails:
        assert "c1" in message and "--llm-allow-unjudged" in message and "why" in message


def test_gpu_run_stops_before_launch_on_a_check_that_cannot_be_judged(
        pytester: pytest.Pytester, suite_dir) -> None:
    suite_dir(SUITE.replace('[suite]\nname = "nj"', '[suite]\nname = "nj"\n'
                            'targets = ["cpu", "mi355x"]'), {"test_nj.py": TESTS}, name="nj")
    (pytester.path / "empty").mkdir()
    result = _run(pytester, "--llm-data-dir", "empty", "--rocm-target", "mi355x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "nj/gsm8k_answers: GSM8K test set:" in err and "--llm-allow-unjudged" in err
    assert not (pytester.path / "engine-ran").exists()
    # Accepted on the command line: the run goes on (to this machine's hardware check).
    allowed = _run(pytester, "--llm-data-dir", "empty", "--rocm-target", "mi355x",
                   "--llm-allow-unjudged")
    assert "cannot be judged" not in allowed.stderr.str()


ATTACHED_GPU_SUITE = suite_head("gpu", {"default": {}, "other": {}}, targets=["mi355x"]) + """
[workloads.w]
kind = "single_stream"
input_tokens = 8
output_tokens = 2
requests = 1
profile = "other"

[checks.speed]
workload = "w"
metric = "output_speed_tok_s"
min = 0.1
source = "test"
"""


def test_gpu_run_with_a_skipped_check_exits_failed(pytester: pytest.Pytester,
                                                   suite_dir) -> None:
    # Attached to an endpoint, a second profile is never launched: the check skips. Nothing
    # listens at the endpoint, and nothing needs to.
    suite_dir(ATTACHED_GPU_SUITE, {"test_gpu.py": TESTS}, name="gpu")
    args = ("--rocm-target", "mi355x", "--llm-endpoint", "http://127.0.0.1:9")
    result = _run(pytester, *args)
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*speed: NOT JUDGED: skipped: attached to --llm-endpoint*",
                                 "*1 declared check(s) not judged on target mi355x*",
                                 "*gpu/speed: skipped: attached*", "*--llm-allow-unjudged*"])
    allowed = _run(pytester, *args, "--llm-allow-unjudged")
    assert allowed.ret == pytest.ExitCode.OK
    allowed.stdout.fnmatch_lines(["*speed: NOT JUDGED: skipped: attached to --llm-endpoint*"])


def test_a_suite_for_other_targets_owes_no_rows(pytester: pytest.Pytester, suite_dir) -> None:
    suite_dir(ATTACHED_GPU_SUITE, {"test_gpu.py": TESTS}, name="gpu")
    result = _run(pytester, "--llm-results", "results.json")  # cpu: the suite is mi355x only
    result.assert_outcomes(skipped=1)
    assert json.loads((pytester.path / "results.json").read_text())["verdicts"] == []


def test_rows_from_setup_skips_reach_the_xdist_controller(pytester: pytest.Pytester,
                                                          suite_dir) -> None:
    suite_dir(ATTACHED_GPU_SUITE, {"test_gpu.py": TESTS.replace(
        "llm_check, llm_judge", "llm_check, llm_server, llm_judge")}, name="gpu")
    result = _run(pytester, "-n", "2", "--rocm-target", "mi355x", "--llm-endpoint",
                  "http://127.0.0.1:9", "--llm-results", "results.json", subprocess=True)
    result.assert_outcomes(skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    [row] = json.loads((pytester.path / "results.json").read_text())["verdicts"]
    assert row["check"] == "speed" and row["status"] == "not-judged"


def test_under_xdist_a_collection_stop_reaches_the_controller(pytester: pytest.Pytester,
                                                               suite_dir) -> None:
    suite_dir(SUITE.replace('[suite]\nname = "nj"', '[suite]\nname = "nj"\n'
                            'targets = ["cpu", "mi355x"]'), {"test_nj.py": TESTS}, name="nj")
    (pytester.path / "empty").mkdir()
    result = _run(pytester, "-n", "2", "--llm-data-dir", "empty", "--rocm-target", "mi355x",
                  "--llm-endpoint", "http://127.0.0.1:9", subprocess=True)
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.INTERNAL_ERROR)
    result.stdout.fnmatch_lines(["*Interrupted: these checks cannot be judged on target "
                                 "mi355x:*"])
    assert "INTERNALERROR" not in result.stdout.str()
    assert not (pytester.path / "engine-ran").exists()


def test_gpu_run_stops_before_launch_when_the_model_is_missing(pytester: pytest.Pytester,
                                                               suite_dir, monkeypatch) -> None:
    monkeypatch.delenv("PYTEST_ROCM_LLM_NJ_MODEL", raising=False)
    model = ('[model]\nid = "org/Missing-1B"\nserved_name = "missing"\n'
             'path_env = "PYTEST_ROCM_LLM_NJ_MODEL"\n')
    suite_dir(SUITE.replace(SMOKE_MODEL, model).replace(
        '[suite]\nname = "nj"', '[suite]\nname = "nj"\ntargets = ["mi355x"]'),
        {"test_nj.py": TESTS}, name="nj")
    result = _run(pytester, "--rocm-target", "mi355x")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert ("nj/gsm8k_accuracy: model org/Missing-1B not found: set "
            "$PYTEST_ROCM_LLM_NJ_MODEL or pass --llm-model-path") in err
    assert not (pytester.path / "engine-ran").exists()
