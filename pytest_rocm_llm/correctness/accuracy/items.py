"""One scored question and the answer extraction every eval shares.

Numbers (GSM8K, arithmetic) and multiple-choice letters (GPQA) are extracted two ways,
as lm-evaluation-harness reports GSM8K: ``strict`` reads only the answer in the format the
prompt asked for ("#### N", "Answer: X"); ``flexible`` reads the last number (letter) in the
text. For numbers, flexible takes the "#### N" answer whenever there is one and the last
number only when there is none: a model that answers "#### 18" and then adds "That took 3
steps." answered 18. Both are always computed; a config picks which one is "accuracy".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

NUMBER = "number"
LETTER = "letter"


@dataclass(frozen=True)
class Item:
    id: str  # stable: the dataset's own id or line index, never the question text
    # The chat prompt; out of repr so that an Item in a traceback never shows a question.
    messages: tuple[Mapping[str, str], ...] = field(repr=False)
    gold: str  # canonical answer: a number ("-1234.5") or a letter ("B")
    answer_format: str  # NUMBER or LETTER
    # True when the prompt must never leave the user's data file (GPQA): records, problems
    # and details then carry ids, letters and status codes only.
    confidential: bool = False


# A number as people and models write it: optional sign, optional currency sign, digits with
# or without thousands commas, optional decimals. "-1,234.50" -> -1234.5; "$5." -> 5 (the dot
# ends the sentence). A minus sign right after a word character is a hyphen ("3-4"), not a
# sign.
_NUM = r"(?:(?<![\w)])-\s?)?\$?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
NUMBER_RE = re.compile(_NUM)
STRICT_NUMBER_RE = re.compile(r"####\s*(" + _NUM + r")")
STRICT_LETTER_RE = re.compile(r"(?i:answer)\s*(?:is)?\s*:?\s*\**\s*\(?\$?([A-D])\b")
LETTER_RE = re.compile(r"(?<![A-Za-z'])\(?([A-D])\)?(?![A-Za-z'])")


def canonical_number(text: str) -> str | None:
    """'-1,234.50' -> '-1234.5', '$5' -> '5', '18.00' -> '18'; None if not a number."""
    cleaned = text.replace(",", "").replace("$", "").replace(" ", "").strip()
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        return None
    if not value.is_finite():
        return None
    if value == 0:
        return "0"  # no "-0"
    return format(value.normalize(), "f")


def extract_number_strict(text: str) -> str | None:
    m = STRICT_NUMBER_RE.search(text)
    return canonical_number(m.group(1)) if m else None


def extract_number_flexible(text: str) -> str | None:
    strict = extract_number_strict(text)
    if strict is not None:
        return strict
    found = NUMBER_RE.findall(text)
    return canonical_number(found[-1]) if found else None


def extract_letter_strict(text: str) -> str | None:
    found = STRICT_LETTER_RE.findall(text)
    return found[-1] if found else None


def extract_letter_flexible(text: str) -> str | None:
    found = LETTER_RE.findall(text)
    return found[-1] if found else None


@dataclass(frozen=True)
class Score:
    strict: str | None  # extracted answer, None when none was found
    flexible: str | None

    def correct(self, gold: str, scoring: str) -> bool:
        return getattr(self, scoring) == gold


def score(item: Item, text: str) -> Score:
    if item.answer_format == NUMBER:
        return Score(extract_number_strict(text), extract_number_flexible(text))
    return Score(extract_letter_strict(text), extract_letter_flexible(text))
