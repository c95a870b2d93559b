"""Model outputs with the score the published method gives them (issue 23 items 6-8): GSM8K
as lm-evaluation-harness scores it (gsm8k task, flexible-extract + exact_match), GPQA as
simple-evals does (``(?i)Answer\\s*:\\s*([A-D])``, first match), long context as RULER's
string_match_all (the expected value as a substring). Written for the tests, labelled by
hand; tests/correctness/test_scoring_corpus.py scores them through the production code.

Measured on this corpus with the scoring before issue 23 (the offset a floor scored by the
published method would have carried): GSM8K flexible 19 right where lm-eval gives 17 (of
26; 8 outputs scored differently); GPQA strict 13 right where simple-evals gives 8 (of 16;
7 differently); long context 3 right where RULER gives 12 (of 15), now 7. The production
scoring now agrees with lm-eval and simple-evals on every entry (offset 0); long context
differs from RULER only on the entries marked ``stricter``.
"""

from __future__ import annotations

from typing import NamedTuple


class Gsm8k(NamedTuple):
    gold: str
    output: str
    lm_eval: bool  # flexible-extract exact_match: the figure floors are judged on
    strict: bool  # the last "#### N", this project's own strict reading


GSM8K = [
    # issue 23 item 6: a "####" inside the reasoning must not beat the final answer
    Gsm8k("18", "Half of 34 is 17, so #### 17 would be wrong; recount: 18 apples.\n#### 18",
          True, True),
    Gsm8k("18", "#### 17 at first, but the last crate adds one.\n#### 18", True, True),
    Gsm8k("0.5", "Each child gets half a pie.\n#### .5", False, True),  # ".5" is a number
    Gsm8k("18", "She makes 9 * 2 = 18 dollars.", True, False),
    Gsm8k("18", "#### 18\nThat took 3 steps.", False, True),
    Gsm8k("1000", "Total: $1,000.", True, False),
    Gsm8k("18", "#### 18.00", False, True),
    Gsm8k("-5", "The change is -5", True, False),
    Gsm8k("42", "The answer is 42.\n\nLet me know if you need anything else!", True, False),
    Gsm8k("42", "#### 42", True, True),
    Gsm8k("42", "I think it's 42 or maybe 43", False, False),
    Gsm8k("7", "There are 7 days. Step 2 of 2", False, False),
    Gsm8k("25", "25 percent, i.e. 25%", True, False),
    Gsm8k("3", "#### 3", True, True),
    Gsm8k("120", "So the total is 120.\n#### 120\n\nNote: 2 assumptions.", False, True),
    Gsm8k("64", "8 x 8 = 64", True, False),
    Gsm8k("5", "#### five", False, False),
    Gsm8k("10", "The result is 10.5 rounded down to 10.", True, False),
    Gsm8k("12", "12, 13, 14 are candidates; the answer is 12", True, False),
    Gsm8k("150", "#### 150\nExplanation: 100 + 50", False, True),
    Gsm8k("9", "answer: 9.", True, False),
    Gsm8k("2", "The 2nd option gives 2", True, False),
    Gsm8k("30", "#### 30 ... recheck: 3 * 10 = 30", True, True),
    Gsm8k("1234", "1,234", True, False),
    Gsm8k("48", "Natalia sold 48 / 2 = 24 clips in May.\n#### 72\nIn April she sold 48.",
          True, False),
    Gsm8k("72", "48 + 24 = 72 clips.\n#### 72\n(48 in April, 24 in May)", False, True),
]


class Gpqa(NamedTuple):
    gold: str
    output: str
    simple_evals: bool


GPQA = [
    Gpqa("B", "The energies differ by 2 eV.\nAnswer: B", True),
    Gpqa("C", "The answer is (C).", False),
    Gpqa("D", "I think D) fits best", False),
    Gpqa("A", "Answer: A\nbut maybe Answer: C", True),  # the first "Answer:" counts
    Gpqa("C", "Answer: A\nActually, Answer: C", False),
    Gpqa("B", "**Answer: B**", True),
    Gpqa("B", "**Answer:** B", False),
    Gpqa("A", "answer: a", False),  # the letter as written: "a" is not A
    Gpqa("D", "ANSWER: D", True),
    Gpqa("B", "The correct answer is B.", False),
    Gpqa("A", "Final answer: A", True),
    Gpqa("B", "Between A and B, I pick B.\nAnswer: B", True),
    Gpqa("C", "Answer (C)", False),
    Gpqa("A", "My answer: A, since the others violate parity.", True),
    Gpqa("D", "Options A-C fail; D remains. The answer is D", False),
    Gpqa("B", "Answer : B", True),
]


class LongContext(NamedTuple):
    expected: str
    output: str
    ruler: bool  # string_match_all: the value anywhere in the output
    ours: bool
    stricter: bool = False  # where this project's exact scoring is deliberately stricter


DISTRACTORS = ("91730", "55102")
LONG_CONTEXT = [
    # issue 23 item 7: a preamble sentence before a right answer
    LongContext("48213", "Sure! The pass key is 48213.", True, True),
    LongContext("48213", " 48213", True, True),
    LongContext("48213", "Here is what I found. The pass key is 48213.", True, True),
    LongContext("48213", "Sure!\n\n48213", True, True),
    LongContext("4821337", "Of course! Let me look.\nThe special magic number for apple is: "
                "4821337.", True, True),
    LongContext("48213", " 48213.\nThe pass key is 482", True, True),
    LongContext("12345", "VAR QWXYZ = 12345", True, True),
    LongContext("48213", " The pass key is 48214.", False, False),
    LongContext("48213", " I do not know.", False, False),
    LongContext("48213", "", False, False),
    LongContext("48213", " 148213", True, False, stricter=True),  # another number
    LongContext("48213", " 48213 or 91730", True, False, stricter=True),  # a list
    LongContext("48213", " 48213. 48213. 48213. 48213", True, False, stricter=True),  # loop
    LongContext("48213", " 48213. The magic number for apple is 55102.", True, False,
                stricter=True),  # naming another candidate
    LongContext("48213", "The text mentions 3 keys. The pass key is 48213.", True, False,
                stricter=True),  # the first sentence with a number answers
]
