"""The plan of a suite on a target, rendered without a server: complete, stable, masked; and
the glm52 profiles' flags as sglang 0.5.23's own parser sees them (engine-marked: runs the
CPU reference environment's parser, no server)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from types import MappingProxyType

import pytest

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite import Profile, Suite, load_suite, parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.redact import MASK
from pytest_rocm_llm.report.plan import gather_flag_checks, render_plan
from pytest_rocm_llm.serving.engines import FlagCheck
from pytest_rocm_llm.serving.pool import ServerPool, SuiteUnavailable
from tests.conftest import REFERENCE_CACHE, ROOT

GLM52 = ROOT / "suites" / "glm52" / "suite.toml"
GOLDEN = Path(__file__).parents[1] / "golden" / "glm52-mi355x.plan.txt"
MI355X = TARGETS["mi355x"]


def settings(**kw: object) -> Settings:
    base = Settings(target=MI355X, endpoint=None, engine_prefix=None, model_path=None,
                    start_timeout_s=1800.0, keep_logs=False, log_dir=None, host="127.0.0.1",
                    cache_dir=Path(REFERENCE_CACHE))
    return dataclasses.replace(base, **kw)


def all_ok(suite: Suite) -> dict[str, FlagCheck]:
    return {name: FlagCheck(name, True) for name in suite.profiles}


def glm52_plan(environ: dict[str, str] | None = None, **kw: object) -> str:
    suite = load_suite(GLM52)
    return render_plan(suite, MI355X, settings(**kw), all_ok(suite), None,
                       engine_version="0.5.23", environ=environ or {})


def test_glm52_plan_matches_the_golden_file() -> None:
    # Regenerate after a deliberate change: REGEN_GOLDEN=1 pytest tests/test_plan.py
    text = glm52_plan()
    if os.environ.get("REGEN_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_glm52_plan_is_stable() -> None:
    assert glm52_plan() == glm52_plan()


def test_glm52_plan_is_complete() -> None:
    text = glm52_plan()
    lines = text.splitlines()
    suite = load_suite(GLM52)
    # target and its hardware figures
    assert "target: mi355x" in text and "gfx950" in text and "288 GB HBM" in text
    assert "$1.48/GPU-hour" in text
    # every profile with its full launch line, environment and verdict
    for name in ("reference", "spec", "throughput"):
        head = next(i for i, ln in enumerate(lines) if ln.startswith(f"profile {name}"))
        block = lines[head + 1:lines.index("", head)]
        argv = block[0]
        assert argv.startswith("  argv: <engine-python> -m sglang.launch_server --model-path")
        assert "--port <port>" in argv and "--kv-cache-dtype fp8_e4m3" in argv
        assert "    SGLANG_USE_AITER=1" in block
        assert block[-1] == "  flags: accepted by sglang 0.5.23's parser"
    spec = next(ln for ln in lines if ln.startswith("  argv:") and "EAGLE" in ln)
    for words in ("--tp-size 8", "--speculative-algorithm EAGLE", "--speculative-num-steps 5",
                  "--speculative-eagle-topk 1", "--speculative-num-draft-tokens 6",
                  "--enable-aiter-allreduce-fusion"):
        assert words in spec
    assert any("--tp-size 4 --dp-size 2" in ln for ln in lines)
    # workloads with sizes and expected counts
    for wname in suite.workloads:
        n, tokens = suite.workload_for(wname, MI355X).expected_tokens
        assert f"sends ~{n} requests, {tokens:,} prompt + output tokens" in text
    assert "10000 in / 1500 out" in text and "20000 in / 1000 out" in text
    assert "cache hit 60%" in text and "2.4 req/s" in text
    # checks with floors, their method and the source of the floor, each beside its check
    for check in suite.checks_for(MI355X):
        head = next(i for i, ln in enumerate(lines) if ln.startswith(f"  {check.name}: "))
        assert check.method and check.source, check.name
        assert lines[head + 1:head + 3] == [f"    method: {check.method}",
                                            f"    source: {check.source}"]
    # a reasoning, tool-calling model on every profile (the flag check runs sglang's parser)
    for ln in lines:
        if ln.startswith("  argv:"):
            assert "--reasoning-parser glm45 --tool-call-parser glm47" in ln
    for name in ("gsm8k", "gsm8k_spec", "gsm8k_throughput", "gpqa", "tau2"):
        e = suite.eval_for(name, MI355X)
        assert dict(e.chat_template_kwargs) == {"enable_thinking": True}, name
        assert f"  {name}: " in text and 'chat_template_kwargs {"enable_thinking": true}' in text
    assert suite.eval_for("gsm8k", MI355X).max_tokens == 16384
    assert "output_speed_tok_s >= 213 tok/s" in text
    assert "ttft_max_s <= 2.22 s" in text
    assert "success_ratio >= 1 " in text
    # what a user must do before a run
    assert "not set: set PYTEST_ROCM_LLM_GLM52_MODEL or pass --llm-model-path" in text
    assert "AITER_CONFIG_FMOE is not set, and profile(s) throughput want it" in text


def test_plan_shows_the_model_path_and_tuning_table_the_user_gave(tmp_path: Path) -> None:
    model = tmp_path / "GLM-5.2-MXFP4"
    table = tmp_path / "glm52_fp4_tuned_fmoe.csv"
    text = glm52_plan({"PYTEST_ROCM_LLM_GLM52_MODEL": str(model),
                       "AITER_CONFIG_FMOE": str(table)})
    assert f"--model-path {model} " in text
    assert f"AITER_CONFIG_FMOE = {table}" in text
    assert "PYTEST_ROCM_LLM_GLM52_MODEL or" not in text
    assert "AITER_CONFIG_FMOE is not set" not in text
    # the option wins over the environment, as in the pool
    other = tmp_path / "other"
    assert f"--model-path {other} " in glm52_plan({"PYTEST_ROCM_LLM_GLM52_MODEL": str(model)},
                                                  model_path=other)


def test_plan_shows_rejections_and_unchecked_profiles() -> None:
    suite = load_suite(GLM52)
    results = all_ok(suite)
    results["spec"] = FlagCheck("spec", False, "unrecognized arguments: --nsa-x 1", ("--nsa-x",))
    text = render_plan(suite, MI355X, settings(), results, None, engine_version="9.9",
                       environ={})
    assert "flags: REJECTED by sglang 9.9's parser: unrecognized arguments: --nsa-x 1" in text
    assert "  - profile spec: REJECTED" in text
    text = render_plan(suite, MI355X, settings(), None, "sglang is not importable\nmore",
                       environ={})
    assert text.count("flags: not checked: sglang is not importable") == len(suite.profiles)
    assert "flags not checked: sglang is not importable" in text


def test_plan_masks_secrets_and_keeps_host_paths_out(tmp_path: Path) -> None:
    data = {"suite": {"name": "sec", "targets": ["cpu", "mi355x"]},
            "model": {"id": "org/m", "reference": "smollm2-135m-instruct"},
            "profiles": {"default": {"env": {"HF_TOKEN": "hf_abc", "MY_API_KEY": "k1",
                                             "db_password": "pw", "PLAIN": "visible"}}}}
    suite = parse_suite(tmp_path / "suite.toml", data)
    for target in (TARGETS["cpu"], MI355X):
        text = render_plan(suite, target, settings(target=target), None, None, environ={})
        assert "hf_abc" not in text and "k1" not in text and "=pw" not in text
        assert f"HF_TOKEN={MASK}" in text and "PLAIN=visible" in text
        assert str(tmp_path) not in text and REFERENCE_CACHE not in text
        assert "/home/" not in text and "site-packages" not in text
    cpu = render_plan(suite, TARGETS["cpu"], settings(target=TARGETS["cpu"]), None, None,
                      environ={})
    assert "PYTHONPATH=<pytest_rocm_llm>/reference/stubs" in cpu
    assert "built by the plugin: CPU reference smollm2-135m-instruct" in cpu


def test_plan_argv_is_the_pools_launch_line() -> None:
    suite = load_suite(GLM52)
    pool = ServerPool(settings(), Path("."))
    argv = pool.launch_argv(suite, "spec", ("<engine-python>",), "/m", 4321)
    shown = " ".join(argv).replace("--port 4321", "--port <port>")
    assert f"  argv: {shown}" in glm52_plan(model_path=Path("/m"))


def test_missing_model_skips_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_ROCM_LLM_GLM52_MODEL", raising=False)
    suite = load_suite(GLM52)
    pool = ServerPool(settings(), Path("."))
    with pytest.raises(SuiteUnavailable, match=r"set \$PYTEST_ROCM_LLM_GLM52_MODEL or pass "
                                               r"--llm-model-path"):
        pool._model_path(suite, suite.model_for(MI355X), ("python3",), "sglang")


def test_glm52_skips_on_the_cpu_target(pytester: pytest.Pytester, engine_env: dict) -> None:
    d = pytester.path / "suites" / "glm52"
    d.mkdir(parents=True)
    for f in GLM52.parent.iterdir():
        if f.suffix in (".toml", ".py"):
            (d / f.name).write_text(f.read_text())
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "suites/glm52", "-rs")
    # every check, the identity test of each profile, and the two serving tests
    suite = load_suite(GLM52)
    result.assert_outcomes(skipped=len(suite.checks) + len(suite.profiles) + 2)
    result.stdout.fnmatch_lines(["*suite glm52 does not run on target cpu (targets: mi355x)*"])


@pytest.mark.engine
def test_glm52_flags_pass_sglangs_own_parser() -> None:
    python = next(Path(REFERENCE_CACHE, "engines").glob("sglang-0.5.23-cpu-*/bin/python"))
    suite = load_suite(GLM52)
    # One parser run for the real profiles and a deliberately wrong one, so the test shows
    # the check can fail: an --nsa-* spelling that sglang 0.5.23 no longer accepts.
    bogus = Profile("bogus", "", MappingProxyType({"nsa-prefill-backend": "tilelang"}),
                    MappingProxyType({}))
    probe = dataclasses.replace(suite, profiles=MappingProxyType({**suite.profiles,
                                                                  "bogus": bogus}))
    report = gather_flag_checks(probe, MI355X, settings(engine_prefix=(str(python),)),
                                progress=lambda _m: None)
    assert report.error is None, report.error
    assert report.version == "0.5.23"
    assert report.results is not None
    for name in suite.profiles:
        assert report.results[name].ok, (name, report.results[name].message)
    assert not report.results["bogus"].ok
    assert "--nsa-prefill-backend" in report.results["bogus"].unknown
    text = render_plan(suite, MI355X, settings(), report.results, report.error,
                       engine_version=report.version, environ={})
    assert text.count("flags: accepted by sglang 0.5.23's parser") == len(suite.profiles)


def test_plan_follows_the_pool_for_reference_models_and_command_prefixes() -> None:
    smoke = load_suite(ROOT / "suites" / "smoke" / "suite.toml")
    local = render_plan(smoke, MI355X, settings(), None, None, environ={})
    assert "path: built by the plugin: CPU reference smollm2-135m-instruct" in local
    assert "engine: sglang, run by the Python running pytest" in local
    docker = ("docker", "exec", "-e", "SGLANG_USE_AITER", "sglang", "python3")
    text = render_plan(smoke, MI355X, settings(engine_prefix=docker), None, None, environ={})
    assert "engine: sglang, run by `docker exec -e SGLANG_USE_AITER sglang python3`" in text
    assert ("  - model path not set: set PYTEST_ROCM_LLM_SMOKE_MODEL or pass --llm-model-path"
            in text)


def test_plan_option_prints_the_plan_and_runs_nothing(pytester: pytest.Pytester):
    """--llm-plan through pytest itself: every selected suite's plan, no server, no test. The
    engine command here cannot run sglang, so the flag validation reports that, by name."""
    suite = pytester.path / "suites" / "glm52"
    suite.mkdir(parents=True)
    (suite / "suite.toml").write_text(GLM52.read_text())
    (suite / "test_glm52_x.py").write_text("def test_x(llm_server):\n    raise AssertionError\n")
    result = pytester.runpytest("--rocm-target", "mi355x", "--llm-plan", "--llm-engine-cmd",
                                "false", "-p", "no:cacheprovider", "suites")
    result.stdout.fnmatch_lines([
        "*rocm-llm plan: glm52 on mi355x*", "*profile spec*",
        "*--speculative-algorithm EAGLE --speculative-num-steps 5*",
        "*single_stream_speed: output_speed_tok_s >= 213 tok/s*", "*1 deselected*"])
    assert "loading server" not in result.stdout.str()
    assert result.ret == 11  # blocked: no model (report/plan_status.py)
