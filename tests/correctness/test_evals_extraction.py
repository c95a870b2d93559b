"""Answer extraction: numbers as people write them (signs, thousands commas, decimals,
currency) round-trip; letters in the "Answer: X" format and loose."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rocm_llm.correctness.accuracy.items import (
    NUMBER,
    Item,
    canonical_number,
    extract_letter_flexible,
    extract_letter_strict,
    extract_number_flexible,
    extract_number_strict,
    score,
)

values = st.decimals(min_value=-10**9, max_value=10**9, places=2, allow_nan=False,
                     allow_infinity=False)


def formats(value: Decimal) -> st.SearchStrategy[str]:
    sign = "-" if value < 0 else ""
    mag = abs(value)
    whole = mag == mag.to_integral_value()
    options = [f"{sign}{mag:,.2f}", f"{sign}{mag:.2f}", f"{sign}${mag:,.2f}"]
    if whole:
        options += [f"{sign}{int(mag):,}", f"{sign}{int(mag)}", f"{sign}${int(mag)}"]
    return st.sampled_from(options)


@given(st.data(), values, st.sampled_from(["The answer is {}.", "{}", "So: {}\n",
                                           "Step 1: 3 + 4 = 7\nTotal = {}!"]))
def test_flexible_takes_the_last_number_whatever_its_format(data, value: Decimal,
                                                            template: str) -> None:
    text = template.format(data.draw(formats(value)))
    assert Decimal(extract_number_flexible(text)) == value


@given(st.data(), values)
def test_strict_reads_the_number_after_hashes(data, value: Decimal) -> None:
    written = data.draw(formats(value))
    text = f"Some reasoning with 12 and 7.\n#### {written}\nThanks, 99"
    assert Decimal(extract_number_strict(text)) == value
    # the answer in the asked format wins over a later number, in flexible mode too
    assert extract_number_flexible(text) == extract_number_strict(text)


@given(st.data(), values, st.text(alphabet="0123456789 ,.-$abc\n", max_size=40))
def test_a_hashes_answer_wins_whatever_prose_follows_it(data, value: Decimal,
                                                        tail: str) -> None:
    text = f"Reasoning: 4 + 5 = 9.\n#### {data.draw(formats(value))}\n{tail}"
    assert Decimal(extract_number_strict(text)) == value
    assert Decimal(extract_number_flexible(text)) == value


def test_issue_example_scores_the_hashes_answer_in_both_modes() -> None:
    # Issue 13 item 5: the last number used to win, scoring 3.
    item = Item(id="test-0", messages=({"role": "user", "content": "q"},), gold="18",
                answer_format=NUMBER)
    s = score(item, "#### 18 That took 3 steps.")
    assert (s.strict, s.flexible) == ("18", "18")
    assert s.correct("18", "strict") and s.correct("18", "flexible")
    s = score(item, "She makes $18.\n#### 18\nThat took 3 steps.")
    assert s.correct("18", "flexible")


def test_flexible_falls_back_to_the_last_number_only_without_hashes() -> None:
    assert extract_number_flexible("She makes 9 * 2 = 18 dollars, in 3 steps.") == "3"
    # "####" with no number after it is not an answer: fall back to the last number
    assert extract_number_flexible("#### none\nso 7 then 8") == "8"


@pytest.mark.parametrize("text, strict, flexible", [
    ("-1,234.50", None, "-1234.5"),
    ("It costs $5.", None, "5"),
    ("#### 18.00", "18", "18"),
    ("3-4 apples", None, "4"),  # a hyphen, not a sign
    ("(-5)", None, "-5"),
    ("no number here", None, None),
    ("#### \n", None, None),
    ("#### -0", "0", "0"),
])
def test_known_cases(text: str, strict: str | None, flexible: str | None) -> None:
    assert extract_number_strict(text) == strict
    assert extract_number_flexible(text) == flexible


def test_canonical_numbers() -> None:
    assert canonical_number("1,000") == "1000"
    assert canonical_number("1e3") == "1000"
    assert canonical_number("abc") is None


@pytest.mark.parametrize("text, strict, flexible", [
    ("Reasoning...\nAnswer: B", "B", "B"),
    ("The answer is (C).", "C", "C"),
    ("I think D) fits best", None, "D"),
    ("answer a lot of questions", None, None),
    ("Answer: A\nbut maybe Answer: C", "C", "C"),
])
def test_letters(text: str, strict: str | None, flexible: str | None) -> None:
    assert extract_letter_strict(text) == strict
    assert extract_letter_flexible(text) == flexible
