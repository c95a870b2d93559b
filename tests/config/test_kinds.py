"""Kinds another package adds through entry points (pytest_rocm_llm/kinds.py).

A real distribution's metadata (a ``.dist-info`` directory with ``entry_points.txt``) on the
path of a fresh interpreter, as ``pip install`` leaves it: the registries read it through
importlib.metadata, as they read any installed package's. No engine is started: the plug-in's
workload runner answers without a server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_rocm_llm.config.evals import EVALS
from pytest_rocm_llm.config.suite import ENGINES
from pytest_rocm_llm.config.workload import WORKLOADS
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.kinds import Registry
from tests.conftest import suite_head

PLUGIN = '''
from dataclasses import replace
from typing import Literal

from pytest_rocm_llm.config.workload import RUN_METRICS, WorkloadKind, WorkloadTable


class BurstTable(WorkloadTable):
    kind: Literal["burst"] = "burst"


async def run_burst(base_url, model, vocab, w, progress, headers):
    from pytest_rocm_llm.performance.workloads import WorkloadResult

    return WorkloadResult(w, [], {"burst_peak": 42.0, "output_tok_s": 7.0})


BURST = WorkloadKind("burst", BurstTable, "plugin_kinds:run_burst", (*RUN_METRICS, "burst_peak"),
                     "one_at_a_time")
# a package cannot take over what a built-in name means
IMPOSTOR = replace(BURST, name="single_stream", runner="plugin_kinds:run_burst")
'''

ENTRY_POINTS = """\
[pytest_rocm_llm.workloads]
burst = plugin_kinds:BURST
single_stream = plugin_kinds:IMPOSTOR

[pytest_rocm_llm.evals]
echo = plugin_kinds:BURST
"""

SUITE = suite_head("demo", {"default": {}}) + """
[workloads.b]
kind = "burst"
input_tokens = 16
output_tokens = 4
requests = 2

[workloads.agg]
kind = "fixed_rate"
input_tokens = 16
output_tokens = 4
requests = 2
request_rate = 1.0

[checks.peak]
workload = "b"
metric = "burst_peak"
min = 40
source = "the plug-in's own figure"
"""

SCRIPT = """
import json, sys, tomllib
from pathlib import Path
from pytest_rocm_llm.config.evals import EVALS
from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.workload import WORKLOADS
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.performance.workloads import run_workload

text = Path(sys.argv[1]).read_text()
suite = parse_suite(Path("suites/demo/suite.toml"), tomllib.loads(text))
result = run_workload("http://127.0.0.1:1", "m", None, suite.workloads["b"], lambda _m: None)
out = {"kinds": list(WORKLOADS.names()), "metrics": result.metrics,
       "single_stream": WORKLOADS.get("single_stream").runner,
       "check": suite.checks["peak"].metric}
errors = {}
try:
    parse_suite(Path("suites/demo/suite.toml"),
                tomllib.loads(text.replace('workload = "b"', 'workload = "agg"')))
except ConfigError as exc:
    errors["metric"] = str(exc)
try:
    EVALS.get("echo")
except ConfigError as exc:
    errors["misnamed"] = str(exc)
out["errors"] = errors
print(json.dumps(out))
"""


def installed_plugin(root: Path) -> Path:
    """``plugin_kinds`` as pip installs a package: the module and its dist-info metadata."""
    root.mkdir()
    (root / "plugin_kinds.py").write_text(PLUGIN)
    info = root / "plugin_kinds-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-kinds\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return root


def test_a_package_adds_a_workload_kind_that_parses_validates_and_runs(tmp_path: Path) -> None:
    site = installed_plugin(tmp_path / "site")
    (tmp_path / "suite.toml").write_text(SUITE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), str(Path(__file__).resolve().parents[2])])}
    run = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "suite.toml")],
                         capture_output=True, text=True, env=env, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["kinds"] == ["single_stream", "fixed_rate", "rate_sweep", "burst"]
    assert out["metrics"] == {"burst_peak": 42.0, "output_tok_s": 7.0}  # the plug-in's runner
    assert out["check"] == "burst_peak"  # a metric only its kind produces, validated by it
    # the built-in keeps its name; the package's impostor is never loaded
    assert out["single_stream"] == "pytest_rocm_llm.performance.workloads:run_single_stream"
    assert out["errors"]["metric"].endswith(
        "key 'checks.peak.metric': burst_peak is measured by a burst workload; 'agg' is a "
        "fixed_rate")
    assert out["errors"]["misnamed"] == (
        "the 'pytest_rocm_llm.evals' entry point 'echo' loads a kind named 'burst'; name the "
        "entry point as the kind")


def test_an_unknown_kind_names_the_known_ones_and_where_more_come_from() -> None:
    with pytest.raises(ConfigError) as info:
        ENGINES.get("trt")
    assert str(info.value) == (
        "'trt' is not an engine kind (sglang, vllm); a package adds one through the "
        "'pytest_rocm_llm.engines' entry point group")


def test_every_built_in_kind_loads_under_its_own_name() -> None:
    from pytest_rocm_llm.config.platforms import PLATFORMS
    from pytest_rocm_llm.kinds import load
    from pytest_rocm_llm.plugin.outputs import OUTPUTS

    registries: tuple[Registry, ...] = (WORKLOADS, EVALS, ENGINES, PLATFORMS, OUTPUTS)
    for registry in registries:
        assert [getattr(kind, registry.key) for kind in registry] == list(registry.names())
    # what the records name by reference (a higher layer's function) exists and is callable
    refs = [w.runner for w in WORKLOADS] + [r for e in EVALS
                                            for r in (e.parser, e.runner, e.inputs) if r]
    assert all(callable(load(r)) for r in refs), refs
    odd: Registry[object] = Registry("a thing", "pytest_rocm_llm.nothing",
                                     {"fixed_rate": "pytest_rocm_llm.config.workload:RATE_SWEEP"})
    with pytest.raises(ConfigError, match="'fixed_rate' loads a kind named 'rate_sweep'"):
        odd.get("fixed_rate")
