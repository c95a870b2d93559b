"""The paired run's table (issue 14 item 5): check | incumbent | candidate | delta [CI] |
verdict, and what the verdicts do to the exit status (regressed fails; inconclusive fails
unless the user says otherwise)."""

from __future__ import annotations

import pytest

from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.report.paired_table import (
    format_paired_table,
    paired_exit_status,
    paired_failures,
    recording_mode,
)
from pytest_rocm_llm.verdicts.paired import (
    PairedVerdict,
    paired_accuracy,
    paired_performance,
)


def speed(check: str, b: list[float]) -> PairedVerdict:
    return paired_performance(check, "output_tok_s", "tok/s", "higher",
                              [18.0, 18.2, 17.9, 18.1], b)


SLOWER = speed("decode_speed", [16.2, 16.4, 16.1, 16.3])
SAME = speed("single_stream", [18.0, 18.25, 17.85, 18.1])
NOISY = speed("throughput", [21.0, 15.0, 20.5, 15.5])
ACCURACY = paired_accuracy("gsm8k", "accuracy", [i % 3 != 0 for i in range(300)],
                           [i % 3 != 0 for i in range(300)])


def test_the_table_has_one_row_per_check_side_by_side() -> None:
    text = format_paired_table([SLOWER, SAME, ACCURACY], "sglang 0.5.23", "sglang 0.5.24")
    lines = text.splitlines()
    header = lines[0]
    for column in ("check", "sglang 0.5.23", "sglang 0.5.24", "delta [98% CI]", "verdict"):
        assert column in header
    assert header.index("sglang 0.5.23") < header.index("sglang 0.5.24")
    row = next(line for line in lines if line.startswith("decode_speed"))
    assert "18.05 tok/s" in row and "16.25 tok/s" in row
    assert "-10.0% [" in row and row.rstrip().endswith("REGRESSED")
    acc = next(line for line in lines if line.startswith("gsm8k"))
    assert "66.7%" in acc and "+0.0 pts [" in acc and acc.rstrip().endswith("PASS")
    # the columns line up: every row's separators where the header's are
    bars = [i for i, ch in enumerate(header) if ch == "|"]
    for line in lines[2:5]:
        assert [i for i, ch in enumerate(line) if ch == "|"] == bars


def test_inconclusive_rows_say_why_under_the_table() -> None:
    text = format_paired_table([NOISY], "old", "new")
    assert "INCONCLUSIVE" in text
    assert "throughput: " in text.splitlines()[-1]
    assert "trials per build" in text


def test_exit_status_fails_on_regressed() -> None:
    assert paired_exit_status([SAME, SLOWER]) is True
    assert paired_exit_status([SAME, SLOWER], inconclusive="pass") is True
    assert paired_failures([SAME, SLOWER]) == [SLOWER]


def test_exit_status_on_inconclusive_is_the_users_choice() -> None:
    assert NOISY.status == "inconclusive"
    assert paired_exit_status([SAME, NOISY]) is True
    assert paired_exit_status([SAME, NOISY], inconclusive="pass") is False


def test_all_pass_is_success() -> None:
    assert paired_exit_status([SAME, ACCURACY]) is False
    assert paired_exit_status([]) is False


def test_a_bad_inconclusive_policy_names_the_option() -> None:
    with pytest.raises(ConfigError, match="--llm-inconclusive"):
        paired_exit_status([SAME], inconclusive="maybe")  # type: ignore[arg-type]


def test_a_paired_run_stores_the_candidate_only_where_it_passed_its_pair() -> None:
    # --llm-update-baselines / --llm-regen-all in a paired run: the candidate becomes the
    # stored baseline for a check only when its paired verdict lets it go ahead
    assert SAME.status == "pass" and SLOWER.status == "regressed"
    assert recording_mode("update", SAME) == "update"
    assert recording_mode("regen", SAME) == "regen"
    assert recording_mode("update", SLOWER) == "check"
    assert recording_mode("regen", SLOWER) == "check"
    assert NOISY.status == "inconclusive"
    assert recording_mode("update", NOISY) == "check"
    assert recording_mode("update", NOISY, "pass") == "update"
    # a plain run and a checking run are untouched
    assert recording_mode("update", None) == "update"
    assert recording_mode("check", SLOWER) == "check"

