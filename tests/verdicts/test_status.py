"""What a verdict can say lives in one record per answer (verdicts/status.py): the stored
text stays what the results file always held, and every output reads its word and category
from there."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from pytest_rocm_llm.errors import InfrastructureError
from pytest_rocm_llm.plugin.allure import CATEGORIES
from pytest_rocm_llm.report.paired_table import paired_failures
from pytest_rocm_llm.serving.diagnosis import infrastructure_failure
from pytest_rocm_llm.verdicts.paired import unpaired
from pytest_rocm_llm.verdicts.status import Category, PairedStatus, Status
from pytest_rocm_llm.verdicts.verdict import Verdict

ROW = Verdict(suite="s", target="cpu", profile="p", check="c", feature="performance",
              metric="m", unit="tok/s", status="pass")


def test_a_row_keeps_its_text_in_the_results_file_and_reads_back_as_the_member() -> None:
    for member in Status:
        row = replace(ROW, status=member.value)  # text, as a results file holds it
        assert row.status is member
        text = json.dumps(row.to_json())
        assert f'"status": "{member.value}"' in text
        assert Verdict.from_json(json.loads(text)).status is member


def test_a_row_travels_to_the_xdist_controller_as_plain_text() -> None:
    """execnet serializes builtins only: an enum in user_properties is an INTERNALERROR."""
    from execnet.gateway_base import dumps

    paired = unpaired("c", "m", "tok/s", "higher", "why")
    for d in (ROW.to_json(), paired.to_json()):
        assert type(d["status"]) is str
        dumps(d)


def test_an_unknown_status_is_refused_where_the_row_is_built() -> None:
    with pytest.raises(ValueError, match="'passed' is not a valid Status"):
        replace(ROW, status="passed")


def test_every_answer_has_its_own_word() -> None:
    words = [m.word for m in Status]
    assert all(words) and len(set(words)) == len(words)
    paired = [m.word for m in PairedStatus]
    assert all(paired) and len(set(paired)) == len(paired)


def full_match(category: dict, message: str) -> bool:
    # Allure 2 full-matches messageRegex (Java's String.matches)
    return re.fullmatch(category["messageRegex"], message) is not None


@pytest.mark.parametrize("category", [c for c in Category if c.lead])
def test_a_message_with_a_lead_lands_in_that_category_alone(category: Category) -> None:
    message = f"tests/x.py::t: {category.lead}what broke\nand its detail"
    landed = [c["name"] for c in CATEGORIES if full_match(c, message)]
    assert landed == [category.title]


def test_a_recorded_baseline_is_its_own_category_not_a_regression() -> None:
    message = "c: no baseline yet; recorded 1 tok/s in b.json. Review it"
    assert [c["name"] for c in CATEGORIES if full_match(c, message)] == [
        Category.BASELINE.title]


def test_the_serving_layer_leads_infrastructure_failures_as_the_category_says() -> None:
    message = infrastructure_failure(None, InfrastructureError("server died"))
    assert message.startswith(Category.INFRASTRUCTURE.lead)


def test_a_failure_category_follows_what_the_check_measured() -> None:
    assert Category.of_check("performance", None) is Category.PERFORMANCE
    assert Category.of_check("correctness", "parity") is Category.PARITY
    assert Category.of_check("correctness", "gsm8k") is Category.ACCURACY


def test_only_a_regression_fails_a_paired_run_by_itself() -> None:
    base = unpaired("c", "m", "tok/s", "higher", "why")
    rows = [replace(base, status=s) for s in PairedStatus]
    assert [r.status for r in paired_failures(rows, "pass")] == [PairedStatus.REGRESSED]
    assert {r.status for r in paired_failures(rows, "fail")} == {
        PairedStatus.REGRESSED, PairedStatus.INCONCLUSIVE}
