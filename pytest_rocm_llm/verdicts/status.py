"""What a verdict can say, one record per answer: the value the results file stores, the word
every output shows, whether it fails the run, and the category its failure message leads with.

The members are strings (``StrEnum``), so the results file, the baseline files and the
golden plan stay byte-for-byte what they were, and a row read back compares equal to its
text. The table, the Markdown summary and the Allure categories read the words and
categories here, never a table of their own.
"""

from __future__ import annotations

from enum import Enum, StrEnum
from typing import Any


class Category(Enum):
    """A failure's category: the lead of its message and the Allure category that sorts
    on it. ``lead`` is what the message starts with (after any test-id prefix)."""

    title: str
    lead: str
    statuses: tuple[str, ...]
    pattern: str

    def __new__(cls, title: str, lead: str, statuses: tuple[str, ...],
                pattern: str = "") -> Category:
        member = object.__new__(cls)
        member._value_ = title
        member.title, member.lead, member.statuses = title, lead, statuses
        member.pattern = pattern or lead
        return member

    INFRASTRUCTURE = ("Infrastructure (server did not start, died, or was unreachable)",
                      "infrastructure: ", ("failed", "broken"))
    PRECONDITION = ("Precondition not met (numbers not judged)", "precondition not met: ",
                    ("failed", "broken"), "precondition not met")
    PERFORMANCE = ("Performance regression", "performance regression: ", ("failed",))
    ACCURACY = ("Accuracy regression", "accuracy regression: ", ("failed",))
    PARITY = ("Parity divergence", "parity divergence: ", ("failed",))
    # A recorded baseline is not a regression: its message has no lead, only its wording.
    BASELINE = ("Baseline recorded or updated (review and rerun)", "", ("failed",),
                "(no baseline yet|baseline updated)")

    @classmethod
    def of_check(cls, feature: str, kind: str | None) -> Category:
        """A judged check's failure: by what it measured (a paired parity eval diverges,
        other evals regress in accuracy)."""
        from pytest_rocm_llm.config.evals import EVALS

        if feature == "performance":
            return cls.PERFORMANCE
        failure = EVALS.get(kind).failure if kind is not None and kind in EVALS else "accuracy"
        return cls.PARITY if failure == "parity" else cls.ACCURACY

    def allure(self) -> dict[str, Any]:
        """Its entry in Allure's categories.json."""
        return {"name": self.title, "matchedStatuses": list(self.statuses),
                "messageRegex": rf"[\s\S]*{self.pattern}[\s\S]*"}


class Status(StrEnum):
    """A check's verdict row."""

    word: str

    # Called with the value alone, an Enum looks the member up: the defaults are never used.
    def __new__(cls, value: str, word: str = "") -> Status:
        member = str.__new__(cls, value)
        member._value_ = value
        member.word = word
        return member

    PASS = "pass", "PASS"
    FAIL = "fail", "FAIL"
    NEW = "new", "NEW (recorded)"
    UPDATED = "updated", "UPDATED"
    PRECONDITION = "precondition", "PRECONDITION NOT MET"
    INFRASTRUCTURE = "infrastructure", "INFRASTRUCTURE"
    # The check's test ran but stopped before a value existed (a skip, or a failure with no
    # verdict of its own); the row's message says why.
    NOT_JUDGED = "not-judged", "NOT JUDGED"


class PairedStatus(StrEnum):
    """A paired comparison's verdict: the candidate build against the incumbent."""

    word: str
    failing: bool  # fails the run whatever --llm-inconclusive says

    def __new__(cls, value: str, word: str = "", failing: bool = False) -> PairedStatus:
        member = str.__new__(cls, value)
        member._value_ = value
        member.word, member.failing = word, failing
        return member

    PASS = "pass", "PASS"
    REGRESSED = "regressed", "REGRESSED", True
    IMPROVED = "improved", "IMPROVED"
    # Fails the run unless --llm-inconclusive pass: undecided is not the same as fine.
    INCONCLUSIVE = "inconclusive", "INCONCLUSIVE"
    # A declared check of a paired run with no paired verdict, the row saying why (never a
    # failure by itself: the stored baseline and floors still judge the candidate).
    UNPAIRED = "unpaired", "NO PAIRED VERDICT"
