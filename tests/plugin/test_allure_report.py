"""The Allure report of a real CPU-suite run: the result files carry labels, the measured
value in the title, parameters, attachments (server argv, log tail, metrics, per-request CSV,
latency histogram and throughput-vs-rate PNGs), environment.properties and categories.json;
then the HTML report is generated with Allure's own generator and opened in headless
Chromium, as a reviewer would, to see the suite, its checks, a value and a plot. The run is
tests/report_run.py's, shared with the planted-secret tests (one server start for both)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report_run import KEY, TOKEN

pytestmark = pytest.mark.engine

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]


def results(alluredir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in alluredir.glob("*-result.json")]


def checks(alluredir: Path) -> dict[str, dict]:
    """The check results by story (the run's other test, a plain failing one, has none)."""
    return {labels(r)["story"][0]: r for r in results(alluredir) if "story" in labels(r)}


def labels(r: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for label in r["labels"]:
        out.setdefault(label["name"], []).append(label["value"])
    return out


def test_result_files_carry_labels_values_and_attachments(report_run):
    root, proc = report_run
    assert "2 failed, 2 passed" in proc.stdout, proc.stdout[-3000:]
    alluredir = root / "allure"
    by_story = checks(alluredir)
    assert set(by_story) == {"speed", "saturation", "impossible"}
    speed = by_story["speed"]
    lab = labels(speed)
    assert lab["parentSuite"] == ["cpu"] and lab["suite"] == ["report"]
    assert lab["feature"] == ["performance"] and lab["subSuite"] == ["default"]
    assert re.fullmatch(r"speed: output_speed_tok_s = [0-9.]+ tok/s", speed["name"])
    params = {p["name"]: p["value"] for p in speed["parameters"]}
    assert "default" in params["profile"] and "decode" in params["workload"]
    names = {a["name"]: a for a in speed["attachments"]}
    for want in ("server argv (report/default)", "metrics (decode)", "per-request records (decode)",
                 "latency histogram (decode)"):
        assert want in names, sorted(names)
    assert any(n.startswith("server log tail (report/default") for n in names)
    argv = (alluredir / names["server argv (report/default)"]["source"]).read_text()
    assert "HF_TOKEN=***" in argv and TOKEN not in argv and KEY not in argv
    png = alluredir / names["latency histogram (decode)"]["source"]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sweep = {a["name"] for a in by_story["saturation"]["attachments"]}
    assert "throughput vs rate (sweep)" in sweep
    bad = by_story["impossible"]
    assert bad["status"] == "failed"
    assert "performance regression: impossible" in bad["statusDetails"]["message"]
    for path in alluredir.iterdir():  # the secrets reached no file of the report
        assert TOKEN.encode() not in path.read_bytes(), path.name
        assert KEY.encode() not in path.read_bytes(), path.name


def test_environment_and_categories(report_run):
    root, _ = report_run
    env = (root / "allure" / "environment.properties").read_text()
    assert "target=cpu" in env and "engine=sglang 0.5.23" in env
    assert "model=HuggingFaceTB/SmolLM2-135M-Instruct" in env
    cats = json.loads((root / "allure" / "categories.json").read_text())
    names = [c["name"] for c in cats]
    for want in ("Infrastructure", "Performance regression", "Accuracy regression",
                 "Parity divergence", "Precondition not met"):
        assert any(n.startswith(want) for n in names)
    msg = checks(root / "allure")["impossible"]["statusDetails"]["message"]
    matching = [c["name"] for c in cats if re.search(c["messageRegex"], msg)]
    assert matching == ["Performance regression"]


def report_tools() -> tuple[str, str] | None:
    allure = shutil.which("allure") or os.environ.get("ALLURE_CLI")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    return (allure, chromium) if allure and chromium else None


def dom_text(chromium: str, url: str, profile: Path) -> str:
    out = subprocess.run([chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                          "--virtual-time-budget=20000", "--dump-dom", url],
                         capture_output=True, text=True, timeout=180).stdout
    body = re.sub(r"<(script|style).*?</\1>", " ", out[out.find("<body"):], flags=re.S)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))


def test_html_report_as_a_person_sees_it(report_run, tmp_path: Path):
    tools = report_tools()
    if tools is None:
        if os.environ.get("PYTEST_ROCM_LLM_REQUIRE_REPORT_TOOLS"):
            pytest.fail("allure (npm: allure@3) and chromium (Debian: chromium) are required")
        pytest.skip("needs the allure CLI (npm i allure@3) and Debian's chromium; "
                    ".ci/run installs both")
    allure, chromium = tools
    root, _ = report_run
    out = tmp_path / "html"
    subprocess.run([allure, "generate", str(root / "allure"), "-o", str(out)], check=True,
                   capture_output=True, timeout=300)
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind",
                               "127.0.0.1"], cwd=out, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        port = int(re.search(r"port (\d+)", server.stdout.readline()).group(1))
        base = f"http://127.0.0.1:{port}/index.html"
        overview = dom_text(chromium, base, tmp_path / "chrome")
        assert "Total 4" in overview and "Failed 2" in overview, overview[:2000]
        speed_id = next(json.loads(p.read_text())["id"]
                        for p in (out / "data" / "test-results").glob("*.json")
                        if json.loads(p.read_text())["name"].startswith("speed:"))
        page = dom_text(chromium, f"{base}#/{speed_id}", tmp_path / "chrome")
        assert re.search(r"speed: output_speed_tok_s = [0-9.]+ tok/s", page), page[:2000]
        assert "suite report" in page and "story speed" in page and "feature performance" in page
        assert "latency histogram (decode) image/png" in page
    finally:
        server.terminate()
        server.wait(timeout=30)
