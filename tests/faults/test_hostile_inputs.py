"""Hostile inputs stop the run before anything starts: suite.toml with wrong types, huge
numbers, negative or non-finite rates and unknown keys, and option values out of range, each
a UsageError naming the input; nothing on disk is overwritten (no server log, no workload
result, the suite file untouched)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import suite_head

BASE = suite_head("hostile", {"default": {"random-seed": 1}}) + """
[workloads.rate]
kind = "fixed_rate"
input_tokens = 64
output_tokens = 8
requests = 4
request_rate = 1.0

[workloads.sweep]
kind = "rate_sweep"
input_tokens = 64
output_tokens = 8
requests = 2
rates = [1.0, 2.0]
ttft_slo_s = 5

[checks.speed]
workload = "rate"
metric = "output_tok_s"
min = 1
source = "test"
"""

TESTS = {"test_serve.py": "def test_serve(llm_server): pass\n"}

PERF_TESTS = {"test_perf.py": """

def test_performance(llm_check, llm_judge):
    llm_judge(llm_check)
"""}

# (what the suite says instead of the valid line, the dotted key the error must name)
SUITE_CASES = [
    ("requests = 4", 'requests = "4"', "workloads.rate.requests", "expected an integer"),
    ("requests = 4", "requests = 100000000000000000000000", "workloads.rate.requests",
     "out of range"),
    ("input_tokens = 64", "input_tokens = 1e300", "workloads.rate.input_tokens",
     "expected an integer"),
    ("request_rate = 1.0", "request_rate = -2.4", "workloads.rate.request_rate", "out of range"),
    ("request_rate = 1.0", "request_rate = inf", "workloads.rate.request_rate", "finite"),
    ("rates = [1.0, 2.0]", "rates = [1.0, -2.0]", "workloads.sweep.rates", "increasing positive"),
    ("rates = [1.0, 2.0]", "rates = [1.0, inf]", "workloads.sweep.rates", "finite"),
    ("rates = [1.0, 2.0]", "rates = [nan]", "workloads.sweep.rates", "finite"),
    ("request_rate = 1.0", "request_rate = 1.0\ntimeout_s = -1", "workloads.rate.timeout_s",
     "out of range"),
    ("request_rate = 1.0", "request_rate = 1.0\nrequets = 3", "workloads.rate.requets",
     "unknown key"),
    ('name = "hostile"', 'name = "hostile"\nnmae = "x"', "suite.nmae", "unknown key"),
    ('flags = { "random-seed" = 1 }', "flags = 7", "profiles.default.flags", "expected a table"),
    ("min = 1", 'min = "fast"', "checks.speed.min", "expected a number"),
    ("requests = 4", "requests = ", None, "not valid TOML"),
    # issue 15: a long-context length beyond the profile's context once launched servers
    ('flags = { "random-seed" = 1 }',
     'flags = { "random-seed" = 1, "context-length" = 8192 }\n\n[evals.long]\n'
     'kind = "long_context"\nlengths = [512, 100000]', "evals.long.lengths",
     "length 100000 does not fit profile 'default'"),
]

OPTION_CASES = [
    (["--llm-start-timeout", "0"], "--llm-start-timeout: invalid value '0'"),
    (["--llm-start-timeout", "-5"], "--llm-start-timeout: invalid value '-5'"),
    (["--llm-start-timeout", "nan"], "--llm-start-timeout: invalid value 'nan'"),
    (["--llm-start-timeout", "1e12"], "--llm-start-timeout: invalid value '1e12'"),
    (["--llm-host", "300.1.1.1"], "--llm-host: invalid value '300.1.1.1'"),
    (["--llm-endpoint", "http://127.0.0.1:99999"], "--llm-endpoint: invalid value"),
    (["--llm-endpoint", "http://user:secret@127.0.0.1:8000"], "put no credentials in the URL"),
    (["--rocm-target", "h100"], "--rocm-target: invalid value 'h100'"),
    (["--llm-signatures", "missing.toml"], "--llm-signatures: invalid value 'missing.toml'"),
]


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def run_usage_error(pytester: pytest.Pytester, directory: Path, *args: str) -> str:
    """Run pytest on ``directory``; assert a usage error and that no file changed."""
    logs = pytester.path / "logs"
    logs.mkdir(exist_ok=True)
    (logs / "earlier-run.log").write_text("a previous run's server log\n")
    before = snapshot(pytester.path)
    # in-process: a rejected run never gets as far as importing anything heavy
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--llm-log-dir", str(logs),
                                          *args, str(directory))
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    after = {k: v for k, v in snapshot(pytester.path).items()
             if not k.startswith(("runpytest-", "stdout", "stderr"))}
    assert after == before, "a rejected run must leave every file as it was"
    assert not list(pytester.path.rglob("llm-workloads")), "no workload may have run"
    return result.stderr.str()


def test_hostile_suite_toml(pytester: pytest.Pytester, suite_dir, fault) -> None:
    for n, (valid, hostile, key, message) in enumerate(SUITE_CASES):
        assert valid in BASE, valid
        d = suite_dir(BASE.replace(valid, hostile, 1), TESTS, name=f"hostile{n}")
        err = run_usage_error(pytester, d, "--rocm-target", "cpu")
        line = next((ln for ln in err.splitlines() if str(d / "suite.toml") in ln), "")
        assert message in line, (hostile, err)
        if key is not None:
            assert f"key '{key}'" in line, (hostile, err)
    fault.assert_no_leak(within_s=5)


def test_hostile_options(pytester: pytest.Pytester, suite_dir, fault) -> None:
    d = suite_dir(BASE, TESTS, name="hostile")
    for args, message in OPTION_CASES:
        err = run_usage_error(pytester, d, *(["--rocm-target", "cpu"] if args[0] !=
                                             "--rocm-target" else []), *args)
        assert any(ln.startswith("ERROR: ") and message in ln for ln in err.splitlines()), \
            (args, err)
        assert "secret" not in err
    fault.assert_no_leak(within_s=5)


def test_hostile_suite_toml_with_perf_checks(pytester: pytest.Pytester, suite_dir,
                                             fault) -> None:
    d = suite_dir(BASE.replace("request_rate = 1.0", "request_rate = -2.4"), PERF_TESTS,
                  name="hostileperf")
    err = run_usage_error(pytester, d, "--rocm-target", "cpu")
    assert "key 'workloads.rate.request_rate'" in err
    fault.assert_no_leak(within_s=5)
