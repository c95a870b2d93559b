"""--llm-summary: the run as Markdown for a CI job's page, built from the terminal's own rows.
The page leads with the outcome pytest exits with, then what needs attention and why."""

from __future__ import annotations

import pytest

from pytest_rocm_llm.report.run_report import PairedRun, RunReport
from pytest_rocm_llm.report.summary import markdown
from pytest_rocm_llm.verdicts.paired import paired_performance
from pytest_rocm_llm.verdicts.verdict import Verdict
from tests.plugin.test_not_judged import SUITE, TESTS, _run

PASSED = Verdict(suite="glm52", target="mi355x", profile="reference", check="single_stream",
                 feature="performance", metric="output_speed_tok_s", unit="tok/s",
                 status="pass", measured=230.0, floor=">= 213 tok/s")
FAILED = Verdict(suite="glm52", target="mi355x", profile="throughput", check="aggregate",
                 feature="performance", metric="output_tok_s", unit="tok/s", status="fail",
                 measured=2100.0, floor=">= 2626 tok/s",
                 message="2100 tok/s is below the floor 2626 | published\nsecond line")


def report(verdicts, paired=None, *, exit_status: int, unjudged: str | None = None):
    pair = None if paired is None else PairedRun("candidate: x", 4, 6, "4-6 trials", "fail",
                                                 tuple(paired))
    return RunReport("mi355x", "compare", "baselines", None, "/r", tuple(verdicts),
                     paired=pair, exit_status=exit_status, unjudged=unjudged)


def test_a_failed_run_says_so_first_then_what_failed_and_why() -> None:
    # A candidate 10% slower over 4 + 4 trials: the paired rule's own verdict, regressed.
    slower = paired_performance("decode_speed", "output_speed_tok_s", "tok/s", "higher",
                                [100.0, 101.0, 99.0, 100.5], [90.0, 91.0, 89.5, 90.2])
    assert slower.status == "regressed"
    text = markdown(report([PASSED, FAILED], [slower], exit_status=1))
    lines = text.splitlines()
    assert lines[0] == "## rocm-llm: glm52 on mi355x"
    assert lines[2] == "**FAIL (pytest exit status 1)**: 1 FAIL, 1 PASS"
    attention = lines[lines.index("### Needs attention") + 2:]
    # the message's first line, its pipe escaped so the list item is not split into cells
    assert attention[0] == ("- `glm52/aggregate` (throughput): FAIL: 2100 tok/s is below the "
                            "floor 2626 \\| published")
    assert attention[1].startswith("- `decode_speed` (paired): the candidate is REGRESSED")
    assert "| aggregate | 2100 tok/s | >= 2626 tok/s | - | - | FAIL |" in lines
    assert "### glm52 [mi355x] profile reference" in lines
    paired_row = next(x for x in lines if x.startswith("| decode_speed |"))
    assert paired_row.endswith("| REGRESSED |") and "-10." in paired_row


def test_a_passing_run_has_nothing_needing_attention() -> None:
    text = markdown(report([PASSED], exit_status=0))
    assert text.splitlines()[2] == "**PASS**: 1 PASS"
    assert "Needs attention" not in text and "Paired run" not in text


def test_checks_never_judged_are_why_a_passing_run_fails() -> None:
    # The run's verdicts all pass, yet the run fails: the page must say why, as the log does.
    why = "2 checks were never judged on mi355x: a passing run must judge them"
    text = markdown(report([PASSED], exit_status=1, unjudged=why))
    lines = text.splitlines()
    assert lines[2] == "**FAIL (pytest exit status 1)**: 1 PASS"
    assert lines[lines.index("### Needs attention") + 2] == f"- {why}"


def test_the_plugin_appends_the_summary_for_each_run(pytester: pytest.Pytester,
                                                    suite_dir) -> None:
    # Two runs into one file, as two steps of a CI job append to $GITHUB_STEP_SUMMARY.
    suite_dir(SUITE, {"test_nj.py": TESTS}, name="nj")
    (pytester.path / "empty").mkdir()
    for _ in range(2):
        result = _run(pytester, "--llm-data-dir", "empty", "--llm-summary", "summary.md")
        assert result.ret == pytest.ExitCode.OK
    text = (pytester.path / "summary.md").read_text()
    assert text.count("## rocm-llm: nj on cpu") == 2
    assert "**PASS**: 2 NOT JUDGED" in text
    assert "- `nj/gsm8k_answers` (default): NOT JUDGED: skipped: GSM8K test set: " in text


def test_a_summary_path_in_a_missing_directory_is_refused_before_anything_runs(
        pytester: pytest.Pytester, suite_dir) -> None:
    suite_dir(SUITE, {"test_nj.py": TESTS}, name="nj")
    result = _run(pytester, "--llm-summary", "nowhere/summary.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--llm-summary" in result.stderr.str() and "does not exist" in result.stderr.str()
    assert not (pytester.path / "engine-ran").exists()
