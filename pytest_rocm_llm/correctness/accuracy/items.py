r"""One scored question and the answer extraction every eval shares.

Numbers (GSM8K, arithmetic) and multiple-choice letters (GPQA) are extracted two ways.
The published floors were scored by other harnesses, so the score that a floor is judged
on reads answers as the source did (issue 23 item 8; offsets measured on
tests/correctness/scoring_corpus.py):

- numbers, ``flexible`` (GSM8K's "accuracy"): lm-evaluation-harness's gsm8k
  ``flexible-extract``: the LAST match of ``(-?[$0-9.,]{2,})|(-?[0-9]+)`` in the text, then
  its exact_match normalization (commas, "$" and a final "." removed) compared as a string
  with the gold number, so "18.00" is not "18" there either. The project's own reading
  (the "#### N" answer first) beat lm-eval's on the same outputs 41 to 31 of 50.
- numbers, ``strict``: the LAST "#### N" (the prompt asks for the answer at the end: a
  "####" inside the reasoning is not the answer; lm-eval's strict-match takes the first),
  numbers as people write them (signs, thousands commas, ".5"). Reported beside accuracy.
- letters, ``strict`` (GPQA's "accuracy"): simple-evals' ``(?i)Answer\s*:\s*([A-D])``, its
  FIRST match (re.search) and the letter as written ("Answer: b" is not B), as simple-evals
  scores GPQA; the project's looser reading ("the answer is (B)", "**Answer: B**") gave
  29 correct where simple-evals gives 18 of the same 40 outputs.
- letters, ``flexible``: the last standalone A-D, a diagnostic only.
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
# ".5" is a number too (no leading digit), but "3." is 3 ending a sentence.
_NUM = (r"(?:(?<![\w)])-\s?)?\$?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
        r"|(?<![\d.])\.\d+)")
NUMBER_RE = re.compile(_NUM)
STRICT_NUMBER_RE = re.compile(r"####\s*(" + _NUM + r")")
# lm-evaluation-harness, tasks/gsm8k/gsm8k.yaml, filter "flexible-extract" (group_select -1)
# and its exact_match regexes_to_ignore
LM_EVAL_FLEXIBLE_RE = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
_LM_EVAL_IGNORE = (re.compile(","), re.compile(r"\$"), re.compile(r"(?s).*#### "),
                   re.compile(r"\.$"))
# simple-evals (openai/simple-evals gpqa_eval.py): ANSWER_PATTERN_MULTICHOICE, re.search
STRICT_LETTER_RE = re.compile(r"(?i)Answer\s*:\s*([A-D])")
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
    """The number after the last "####" that has one."""
    found = STRICT_NUMBER_RE.findall(text)
    return canonical_number(found[-1]) if found else None


def extract_number_flexible(text: str) -> str | None:
    """lm-eval's flexible-extract and exact_match normalization (module docstring); None
    where lm-eval finds nothing ("[invalid]") or the normalized string is empty."""
    found = LM_EVAL_FLEXIBLE_RE.findall(text)
    if not found:
        return None
    groups = [g for g in found[-1] if g]
    answer = groups[0] if groups else ""
    for pattern in _LM_EVAL_IGNORE:
        answer = pattern.sub("", answer)
    answer = answer.strip()
    return answer or None


def extract_letter_strict(text: str) -> str | None:
    m = STRICT_LETTER_RE.search(text)
    return m.group(1) if m else None


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
