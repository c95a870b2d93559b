"""The Allure side of a check: labels, a title with the measured value, parameters,
attachments, and the run-level environment.properties and categories.json.

Used only when allure-pytest is installed and ``--alluredir`` given; ``allure`` is imported
inside the functions, so the plugin loads without it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_rocm_llm.verdicts.status import Category
from pytest_rocm_llm.verdicts.verdict import Verdict

# Failure messages lead with these words (verdicts/status.py's Category: one record each).
# [\s\S]* instead of an inline DOTALL flag: the same pattern works in Allure 2's Java
# full-match and Allure 3's JavaScript search.
CATEGORIES = [c.allure() for c in Category]


@dataclass(frozen=True)
class Attachment:
    name: str
    body: bytes | str
    kind: str  # text | json | csv | png


def active(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "allure_report_dir", None)) and \
        config.pluginmanager.hasplugin("allure_pytest")


def _type(kind: str) -> object:
    import allure

    return {"text": allure.attachment_type.TEXT, "json": allure.attachment_type.JSON,
            "csv": allure.attachment_type.CSV, "png": allure.attachment_type.PNG}[kind]


def annotate(v: Verdict, attachments: Sequence[Attachment]) -> None:
    """Called while the test runs (allure.dynamic applies to the running test)."""
    import allure

    allure.dynamic.parent_suite(v.target)
    allure.dynamic.suite(v.suite)
    allure.dynamic.sub_suite(v.profile)
    allure.dynamic.feature(v.feature)
    allure.dynamic.story(v.check)
    value = "not judged" if v.measured is None else (
        f"{v.measured:.4g}{' ' + v.unit if v.unit else ''}")
    allure.dynamic.title(f"{v.check}: {v.metric} = {value}")
    allure.dynamic.parameter("profile", v.profile)
    if v.workload:
        allure.dynamic.parameter("workload", v.workload)
    if v.floor:
        allure.dynamic.parameter("floor", v.floor)
    if v.baseline is not None:
        allure.dynamic.parameter("baseline", f"{v.baseline:.4g} ({v.baseline_kind})")
    allure.dynamic.description(_description(v))
    for a in attachments:
        allure.attach(a.body, name=a.name, attachment_type=_type(a.kind))


def _description(v: Verdict) -> str:
    lines = [f"Verdict: {v.status}", f"Floor: {v.floor or '-'} ({v.floor_source or '-'})"]
    if v.gate:
        lines.append(f"Baseline gate: {v.gate}")
    lines += [f"Reference: {r}" for r in v.references]
    if v.message:
        lines.append(v.message)
    return "\n\n".join(lines)


def write_run_files(alluredir: Path, environment: Mapping[str, str]) -> None:
    alluredir.mkdir(parents=True, exist_ok=True)
    (alluredir / "categories.json").write_text(json.dumps(CATEGORIES, indent=2))
    # Java properties: '=' ':' and '\\' escaped; one key per line.
    lines = []
    for k, val in environment.items():
        esc = str(val).replace("\\", "\\\\").replace("=", "\\=").replace(":", "\\:")
        lines.append(f"{k}={esc}")
    (alluredir / "environment.properties").write_text("\n".join(lines) + "\n")
