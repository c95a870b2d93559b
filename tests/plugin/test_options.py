"""Command-line and ini options: every bad value is a UsageError naming the option."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import SMOKE_MODEL

MINIMAL = f"""
[suite]
name = "demo"
{SMOKE_MODEL}
[profiles.default]
"""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--rocm-target", "mi999x"], "--rocm-target: invalid value 'mi999x'; accepted: mi355x"),
        (["--llm-endpoint", "localhost:30000"], "--llm-endpoint: invalid value"),
        (["--llm-endpoint", "http://127.0.0.1:99999"], "the port must be 1-65535"),
        (["--llm-start-timeout", "soon"], "--llm-start-timeout: invalid value 'soon'"),
        (["--llm-start-timeout", "-5"], "between 0 and 86400"),
        (["--llm-engine-python", "/nonexistent/python"], "--llm-engine-python: invalid value"),
        (["--llm-engine-cmd", "no-such-launcher python3"], "'no-such-launcher' is not an exec"),
        (["--llm-engine-cmd", "'unclosed"], "cannot split it as a shell command"),
        (["--llm-host", "my host"], "--llm-host: invalid value 'my host'"),
        # TEST-NET-1 (RFC 5737): never an address of this machine
        (["--llm-host", "192.0.2.1"], "--llm-host: invalid value '192.0.2.1'; this machine "
                                      "cannot listen there (cannot assign requested address)"),
        (["--llm-model-path", "/nonexistent/model"], "expected an existing model directory"),
        # a paired run's candidate build: validated like the engine's, named by its own flag
        (["--llm-candidate-python", "/nonexistent/python"],
         "--llm-candidate-python: invalid value '/nonexistent/python'"),
        (["--llm-candidate-cmd", "no-such-launcher python3"],
         "--llm-candidate-cmd: invalid value 'no-such-launcher python3'; 'no-such-launcher' is "
         "not an executable on PATH"),
        (["--llm-candidate-python", sys.executable, "--llm-candidate-cmd", "python3"],
         "--llm-candidate-python and --llm-candidate-cmd both given"),
        (["--llm-candidate-env", "OMP_NUM_THREADS"], "--llm-candidate-env: invalid value "
                                                     "'OMP_NUM_THREADS'; expected KEY=VALUE"),
        (["--llm-candidate-flags", "dtype float32"], "--llm-candidate-flags: invalid value"),
        (["--llm-pair-trials", "0"], "--llm-pair-trials: invalid value '0'"),
        (["--llm-pair-budget", "65"], "--llm-pair-budget: invalid value '65'; expected "
                                      "trials per build, 1-64"),
        # killing a `docker exec` client leaves the engine running (docker/cli#5309)
        (["--llm-engine-cmd", "docker exec -e K ctr python3"],
         "--llm-engine-cmd: a 'docker exec' prefix is refused (stopping the exec client "
         "leaves the engine running in the container); pass --llm-engine-image IMAGE"),
        (["--llm-candidate-cmd", "sudo /usr/bin/podman container exec ctr python3"],
         "--llm-candidate-cmd: a 'podman exec' prefix is refused"),
        (["--llm-engine-image", "img", "--llm-engine-cmd", "python3"],
         "--llm-engine-cmd and --llm-engine-image both given"),
        (["--llm-candidate-image", "img", "--llm-container-runtime", "lxc"],
         "--llm-container-runtime: invalid value 'lxc'; accepted: docker, podman"),
        (["--llm-inconclusive", "ignore"], "--llm-inconclusive: invalid value 'ignore'; "
                                           "accepted: fail, pass"),
    ],
)
def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester, args: list[str],
                                            expected: str) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert expected in result.stderr.str()


def test_engine_python_and_cmd_are_exclusive(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--llm-engine-python", sys.executable,
                                "--llm-engine-cmd", "python3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--llm-engine-python and --llm-engine-cmd both given" in result.stderr.str()


def test_credentials_in_endpoint_are_refused_and_not_echoed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--llm-endpoint", "http://user:s3cret@127.0.0.1:30000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "put no credentials in the URL" in err
    assert "s3cret" not in err + result.stdout.str()


def test_ini_value_is_validated_like_the_flag(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nrocm_target = h100\n")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--rocm-target: invalid value 'h100'" in result.stderr.str()


def test_command_line_beats_ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nrocm_target = mi300x\nllm_start_timeout = 30\n")
    pytester.makepyfile(
        """
        def test_x(llm_settings):
            assert llm_settings.target.name == "cpu"
            assert llm_settings.start_timeout_s == 30.0
            assert llm_settings.host == "127.0.0.1"
        """
    )
    result = pytester.runpytest("--rocm-target", "cpu")
    result.assert_outcomes(passed=1)


def test_environment_variable_is_used_when_no_flag(pytester: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_ROCM_TARGET", "mi325x")
    pytester.makepyfile(
        """
        def test_x(llm_settings):
            assert llm_settings.target.arch == "gfx942"
        """
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_suites_require_a_target(pytester: pytest.Pytester, suite_dir) -> None:
    suite_dir(MINIMAL, {"test_a.py": "def test_a(llm_server): pass"})
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--rocm-target is required to run suites (demo)" in result.stderr.str()


def test_plain_tests_do_not_need_a_target(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass")
    pytester.runpytest().assert_outcomes(passed=1)


def test_options_are_listed_in_one_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*LLM serving conformance (pytest-rocm-llm)*",
                                 "*--rocm-target=ROCM_TARGET*"])


def test_loading_the_plugin_imports_nothing_heavy() -> None:
    code = (
        "import sys, pytest_rocm_llm.plugin.hooks, pytest_rocm_llm.client.generate;"
        "heavy = [m for m in ('torch', 'sglang', 'allure', 'allure_pytest', 'numpy',"
        " 'transformers', 'vllm') if m in sys.modules];"
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, f"plugin import pulled in {out.stdout.strip()}"


def test_unreachable_endpoint_is_an_infrastructure_error(pytester: pytest.Pytester,
                                                         suite_dir) -> None:
    from pytest_rocm_llm.serving.ports import claim_port, release_port

    port = claim_port()  # claimed and never listened on: nothing answers there
    try:
        suite_dir(MINIMAL, {"test_a.py": "def test_a(llm_server): pass"})
        result = pytester.runpytest("--rocm-target", "cpu", "--llm-endpoint",
                                    f"http://127.0.0.1:{port}")
    finally:
        release_port(port)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([f"*infrastructure: cannot query --llm-endpoint "
                                 f"http://127.0.0.1:{port}*"])
