"""Answer extraction: numbers as people write them (signs, thousands commas, decimals,
currency) round-trip; letters in the "Answer: X" format and loose. Since issue 23 the
flexible number is lm-evaluation-harness's flexible-extract (the last number, the "####"
answer not preferred) and the strict letter simple-evals' first "Answer: X"
(tests/correctness/test_scoring_corpus.py scores a corpus against both)."""

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
    text = f"Some reasoning with 12 and 7.\n#### 12\n#### {written}\nThanks, 99"
    assert Decimal(extract_number_strict(text)) == value  # the last "####" answers
    # lm-eval's flexible-extract reads the last number, whatever came before it
    assert extract_number_flexible(text) == "99"


@given(st.data(), values, st.text(alphabet="0123456789 ,.-$abc\n", max_size=40))
def test_a_hashes_answer_wins_whatever_prose_follows_it(data, value: Decimal,
                                                        tail: str) -> None:
    text = f"Reasoning: 4 + 5 = 9.\n#### {data.draw(formats(value))}\n{tail}"
    assert Decimal(extract_number_strict(text)) == value


def test_strict_takes_the_last_hashes_and_flexible_scores_as_lm_eval() -> None:
    # Issue 13 item 5 made "#### 18 That took 3 steps." flexible 18; issue 23 item 8 scores
    # flexible as lm-eval does (the published floors' method), which reads 3 there.
    item = Item(id="test-0", messages=({"role": "user", "content": "q"},), gold="18",
                answer_format=NUMBER)
    s = score(item, "#### 18 That took 3 steps.")
    assert (s.strict, s.flexible) == ("18", "3")
    # issue 23 item 6: the first "####" used to win (17)
    assert score(item, "#### 17 ... recount.\n#### 18").strict == "18"
    assert extract_number_strict("#### .5") == "0.5"  # used to find no number


def test_flexible_falls_back_to_the_last_number_only_without_hashes() -> None:
    assert extract_number_flexible("She makes 9 * 2 = 18 dollars, in 3 steps.") == "3"
    # "####" with no number after it is not an answer: fall back to the last number
    assert extract_number_flexible("#### none\nso 7 then 8") == "8"


@pytest.mark.parametrize("text, strict, flexible", [
    ("-1,234.50", None, "-1234.50"),  # lm-eval keeps the written decimals
    ("It costs $5.", None, "5"),
    ("#### 18.00", "18", "18.00"),  # lm-eval: "18.00" is not "18"
    ("3-4 apples", None, "-4"),  # lm-eval's regex reads a hyphen as a sign
    ("(-5)", None, "-5"),
    ("no number here", None, None),
    ("#### \n", None, None),
    ("#### -0", "0", "-0"),
    ("half: .5", None, ".5"),
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
    ("The answer is (C).", None, "C"),  # simple-evals needs "Answer:"
    ("I think D) fits best", None, "D"),
    ("answer a lot of questions", None, None),
    ("Answer: A\nbut maybe Answer: C", "A", "C"),  # simple-evals: the first "Answer:"
])
def test_letters(text: str, strict: str | None, flexible: str | None) -> None:
    assert extract_letter_strict(text) == strict
    assert extract_letter_flexible(text) == flexible
