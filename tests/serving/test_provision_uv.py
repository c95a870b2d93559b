"""The CPU reference's environments are installed by uv from the package sources pip is
configured with.

uv reads no pip.conf and no PIP_* variable: on a machine whose torch builds lie in local
indexes, a wheel directory and behind a constraint file, uv left alone resolves other
versions than pip (a CUDA torch of several GB for vLLM). These read pip's configuration as
``pip config list`` prints it and check what reaches uv: its argv and environment, recorded
by a stand-in for uv's binary started through the real _run. No engine is built.
"""

from __future__ import annotations

import shlex
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pytest_rocm_llm.serving.reference import installer, provision
from pytest_rocm_llm.serving.reference.installer import pip_options, uv_sources
from pytest_rocm_llm.serving.reference.provision import ProvisionError, engine_dir
from tests.conftest import suite_head

# `pip config list` on a machine like this project's: a constraint file in the global
# config, local indexes and a wheel directory in the user's, PIP_* variables as :env:.
PIP_CONFIG_LIST = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.disable-pip-version-check='1'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
"""


def flag_values(args: list[str] | tuple[str, ...], flag: str) -> list[str]:
    return [args[i + 1] for i, a in enumerate(args) if a == flag]


def test_pip_config_list_is_read_with_pips_precedence() -> None:
    text = PIP_CONFIG_LIST + "install.find-links='/srv/install-links'\n"
    options = pip_options(text, {})
    assert options["constraint"] == "/etc/xdg/pip/constraints.txt"
    assert options["extra-index-url"] == "file:///opt/pypi/simple file:///opt/pypi-more/simple"
    assert options["find-links"] == "/opt/wheels"  # :env: over [install] over [global]
    assert options["timeout"] == "180"
    assert "disable-pip-version-check" not in options  # not a source: not mirrored
    # The process's own PIP_* variables win, as on pip's command line.
    assert pip_options(text, {"PIP_INDEX_URL": "https://mirror/simple"})["index-url"] == (
        "https://mirror/simple")
    assert pip_options("global.index-url='a'\ninstall.index-url='b'\n", {})["index-url"] == "b"


def test_uv_gets_pips_indexes_find_links_and_constraint() -> None:
    sources = uv_sources(pip_options(PIP_CONFIG_LIST, {}))
    args = sources.args
    assert flag_values(args, "--extra-index-url") == ["file:///opt/pypi/simple",
                                                      "file:///opt/pypi-more/simple"]
    assert flag_values(args, "--find-links") == ["/opt/wheels"]
    assert flag_values(args, "--constraint") == ["/etc/xdg/pip/constraints.txt"]
    assert flag_values(args, "--index-strategy") == ["unsafe-best-match"]
    assert "--index-url" not in args  # pip's default index is uv's default too
    assert sources.env == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
                           "UV_HTTP_TIMEOUT": "180"}
    no_index = uv_sources(pip_options("global.no-index='true'\n",
                                      {"PIP_INDEX_URL": "file:///i"})).args
    assert "--no-index" in no_index and flag_values(no_index, "--index-url") == ["file:///i"]


@pytest.fixture
def fake_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """uv's binary replaced by a script that records its argv and environment; pip's
    configuration replaced by PIP_CONFIG_LIST. Returns the record's path."""
    seen = tmp_path / "seen"
    uv = tmp_path / "uv"
    uv.write_text(f'#!/bin/sh\necho "$@" >> {seen}\n'
                  f'echo "$UV_CACHE_DIR|$TMPDIR|$SSL_CERT_FILE|$UV_HTTP_TIMEOUT" >> {seen}\n'
                  'if [ -n "$FAKE_UV_FAIL" ]; then echo "error: no solution for torch==9"; '
                  'exit 2; fi\n')
    uv.chmod(0o755)
    monkeypatch.setattr(installer, "uv_bin", lambda: str(uv))
    monkeypatch.setattr(installer, "pip_config_list", lambda python="": PIP_CONFIG_LIST)
    for name in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT",
                 "PIP_CERT", "PIP_DEFAULT_TIMEOUT", "PIP_TIMEOUT", "PIP_NO_INDEX"):
        monkeypatch.delenv(name, raising=False)
    return seen


def test_an_install_step_runs_uv_with_pips_sources_and_its_cache_beside_the_build(
        tmp_path: Path, fake_uv: Path) -> None:
    env_dir = tmp_path / "engines" / "x"
    log = tmp_path / "build.log"
    lines: list[str] = []
    provision._install(env_dir, provision._sources(log), ["--no-deps", "pkg==1"], log,
                       "installing pkg", lines.append)
    argv, env = fake_uv.read_text().splitlines()
    args = shlex.split(argv)
    assert args[:5] == ["pip", "install", "--python", str(env_dir / "bin" / "python"),
                        "--link-mode"]
    assert args[-2:] == ["--no-deps", "pkg==1"]
    assert flag_values(args, "--constraint") == ["/etc/xdg/pip/constraints.txt"]
    assert flag_values(args, "--find-links") == ["/opt/wheels"]
    assert len(flag_values(args, "--extra-index-url")) == 2
    tmp = tmp_path / "engines" / "x.tmp"
    uv_cache = tmp_path / "engines" / "uv-cache"  # beside the environments, kept
    assert env == f"{uv_cache}|{tmp}|/etc/ssl/certs/ca-certificates.crt|180"
    assert "unsafe-best-match" in log.read_text()  # the sources used, in the build log
    assert lines[0].startswith("[rocm-llm] reference: installing pkg (log ")
    assert lines[-1].startswith("[rocm-llm] reference: installing pkg done in ")


def test_a_failed_uv_step_raises_provision_error_with_the_log_tail_and_is_redone(
        tmp_path: Path, fake_uv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_UV_FAIL", "1")
    with pytest.raises(ProvisionError) as exc:
        provision.ensure_engine(tmp_path, lambda _: None, engine="vllm")
    message = str(exc.value)
    assert "creating the vllm environment's venv failed (exit 2)" in message
    assert "error: no solution for torch==9" in message  # uv's own words, from the log
    env_dir = engine_dir(tmp_path, "vllm")
    assert not (env_dir / ".complete").exists()
    assert not provision._build_tmp(env_dir).exists()  # its temporary files went with it
    assert fake_uv.read_text().split()[:2] == ["venv", "--clear"]  # a retry starts clean


def stand_in_builds_take_no_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-ins below write an empty directory, not GiBs: their size is declared as
    such, or the disk check (test_provision_space.py) would judge them by the host's free
    space (CI failed here with 11.2 GiB free after its own reference build)."""
    monkeypatch.setattr(provision, "BUILD_DISK_GIB", dict.fromkeys(provision.BUILD_DISK_GIB, 0.0))


def builds_that_wait_for_each_other(
        monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[tuple[str, Path]]]:
    """Both engines' builds replaced by one that waits for the other build to have started
    and then makes its environment (built one after the other, the first waits until the
    barrier's timeout breaks it and the build fails), the model conversion by a recorder.
    Returns the engines built and the (model, python) of each conversion, as they come."""
    stand_in_builds_take_no_disk(monkeypatch)
    started = threading.Barrier(2, timeout=20)
    built: list[str] = []
    converted: list[tuple[str, Path]] = []

    def build(env_dir: Path, python: Path, log: Path, progress: object) -> str:
        started.wait()
        env_dir.mkdir()
        built.append(env_dir.name.split("-")[0])
        return "built"

    monkeypatch.setattr(provision, "_build_sglang", build)
    monkeypatch.setattr(provision, "_build_vllm", build)
    monkeypatch.setattr(provision, "ensure_model",
                        lambda cache, name, python, progress: converted.append((name, python)))
    return built, converted


def test_builds_that_are_both_needed_run_at_the_same_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built, converted = builds_that_wait_for_each_other(monkeypatch)
    pythons = provision.ensure_engines(tmp_path, ["vllm", "sglang", "atom"],
                                       ["smollm2-135m-instruct"], lambda _: None)
    assert set(pythons) == {"sglang", "vllm"} and sorted(built) == ["sglang", "vllm"]
    for engine in ("sglang", "vllm"):
        assert (engine_dir(tmp_path, engine) / ".complete").read_text() == "built"
    # once, with sglang's environment
    assert converted == [("smollm2-135m-instruct", pythons["sglang"])]


def test_when_one_of_two_builds_fails_the_other_still_completes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(env_dir: Path, python: Path, log: Path, progress: object) -> str:
        raise ProvisionError("reference: installing torch failed (exit 1)")

    stand_in_builds_take_no_disk(monkeypatch)
    monkeypatch.setattr(provision, "_build_sglang", fail)
    monkeypatch.setattr(provision, "_build_vllm", lambda env_dir, *a: env_dir.mkdir() or "built")
    with pytest.raises(ProvisionError, match="installing torch failed"):
        provision.ensure_engines(tmp_path, ["sglang", "vllm"], [], lambda _: None)
    assert (engine_dir(tmp_path, "vllm") / ".complete").is_file()
    assert not (engine_dir(tmp_path, "sglang") / ".complete").exists()


SUITE = suite_head("both", {"default": {}, "spec": {}}) + 'engine = "vllm"\n'  # spec's engine


def test_a_cpu_run_that_needs_both_engines_builds_them_side_by_side_before_its_tests(
        pytester: pytest.Pytester, suite_dir, monkeypatch: pytest.MonkeyPatch) -> None:
    built, converted = builds_that_wait_for_each_other(monkeypatch)
    suite_dir(SUITE, {"test_both.py": "def test_up():\n    pass\n"}, name="both")
    pytester.makeini("[pytest]\n")
    cache = pytester.path / "cache"
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--rocm-target", "cpu",
                                          "--llm-cache-dir", str(cache), "suites")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert sorted(built) == ["sglang", "vllm"]
    assert [name for name, _python in converted] == ["smollm2-135m-instruct"]
    # Built: the first test that needs a server finds both complete and builds nothing.
    assert provision.unbuilt(cache, ["sglang", "vllm"]) == []


def test_the_environment_is_compiled_once_even_where_bytecode_is_never_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A real interpreter's environment (a venv, no pip) with one module and one file that is
    # not Python 3: the step compiles the module, tolerates the other, and writes bytecode
    # although PYTHONDONTWRITEBYTECODE (set on the CI machines) stops imports from doing so.
    import subprocess
    import sys
    import sysconfig

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    purelib = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    (purelib / "engine_mod.py").write_text("VALUE = 42\n")
    (purelib / "py2_data.py").write_text("print 'not python 3'\n")
    log = tmp_path / "build.log"
    provision._compile_bytecode(python, log, lambda _msg: None)
    tag = sysconfig.get_config_var("py_version_nodot")
    assert list((purelib / "__pycache__").glob(f"engine_mod.*{tag}*.pyc")), log.read_text()
    assert not list((purelib / "__pycache__").glob("py2_data.*.pyc"))


def test_uv_is_found_once_so_builds_on_other_threads_never_read_sysconfig_half_filled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """CI failed with TypeError in uv's find_uv_bin: the sglang build's thread read
    sysconfig while the vLLM build's thread was filling it (not thread-safe before 3.12).
    Once found, uv's path is the same on every thread whatever sysconfig holds then."""
    import sysconfig

    first = installer.uv_bin()
    monkeypatch.setattr(sysconfig, "_CONFIG_VARS", {})  # what the second thread saw
    assert _uv_bin_on_threads(4) == [first] * 4


def test_uv_is_looked_up_by_one_thread_while_the_others_wait(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import uv

    calls: list[int] = []

    def slow_find() -> str:
        calls.append(1)
        time.sleep(0.2)
        return "/opt/uv"

    installer._uv_bin.cache_clear()
    monkeypatch.setattr(uv, "find_uv_bin", slow_find)
    seen = _uv_bin_on_threads(3)
    installer._uv_bin.cache_clear()
    assert (len(calls), seen) == (1, ["/opt/uv"] * 3)


def _uv_bin_on_threads(n: int) -> list[str]:
    """uv_bin() called from n threads at once, as provisioning's builds call it."""
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(lambda _: installer.uv_bin(), range(n)))
