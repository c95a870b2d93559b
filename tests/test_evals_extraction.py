"""Answer extraction: numbers as people write them (signs, thousands commas, decimals,
currency) round-trip; letters in the "Answer: X" format and loose."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rocm_llm.evals.items import (
    canonical_number,
    extract_letter_flexible,
    extract_letter_strict,
    extract_number_flexible,
    extract_number_strict,
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
    assert extract_number_flexible(text) == "99"


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
