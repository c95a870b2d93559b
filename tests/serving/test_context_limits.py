"""A long-context length the profile cannot hold is a usage error when suite.toml is read,
naming the file, the key, the length, the limit and the fix; no server is started."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from pytest_rocm_llm.config.context_limits import flag_tokens, profile_limit
from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.correctness.context_fit import model_context
from pytest_rocm_llm.errors import ConfigError
from tests.conftest import suite_head

SUITE = suite_head("lc", {"reference": {"context-length": 8192}}, targets=["cpu", "mi355x"],
                   default_profile="reference") + """
[profiles.spec]
engine = "vllm"
flags = { "max-model-len" = 2048 }

[evals.long]
kind = "long_context"
lengths = [512, 1024]
max_tokens = 16
"""
FILE = Path("/suites/lc/suite.toml")


def parse(text: str):
    return parse_suite(FILE, tomllib.loads(text))


def usage_error(text: str) -> str:
    with pytest.raises(ConfigError) as e:
        parse(text)
    return str(e.value)


def test_lengths_within_the_context_parse() -> None:
    assert parse(SUITE).evals["long"].lengths == (512, 1024)
    # the last length that fits: 8192 - max_tokens 16
    assert parse(SUITE.replace("[512, 1024]", "[512, 8176]")).evals["long"].lengths[-1] == 8176


def test_a_length_beyond_the_context_length_is_a_usage_error() -> None:
    err = usage_error(SUITE.replace("[512, 1024]", "[512, 100000]"))
    assert err.startswith(f"{FILE}: key 'evals.long.lengths': length 100000 ")
    assert "context-length of 8192" in err and "max_tokens 16" in err
    assert "lengths of at most 8176" in err and "[profiles.reference.flags]" in err


def test_max_tokens_counts_against_the_context() -> None:
    err = usage_error(SUITE.replace("[512, 1024]", "[8177]"))
    assert "key 'evals.long.lengths': length 8177" in err


def test_sglang_keeps_headroom_beyond_a_small_max_tokens() -> None:
    # sglang refuses an input within 8 tokens of its limit whatever max_tokens is
    text = SUITE.replace("max_tokens = 16", "max_tokens = 1")
    assert parse(text.replace("[512, 1024]", "[8184]"))
    assert "length 8185" in usage_error(text.replace("[512, 1024]", "[8185]"))


def test_the_profile_that_runs_the_eval_decides_vllm_max_model_len() -> None:
    text = SUITE.replace('max_tokens = 16', 'max_tokens = 16\nprofile = "spec"')
    err = usage_error(text.replace("[512, 1024]", "[512, 4096]"))
    assert "key 'evals.long.lengths': length 4096" in err
    assert "profile 'spec'" in err and "max-model-len of 2048 (vllm)" in err
    assert parse(text.replace("[512, 1024]", "[2032]"))  # vLLM: prompt + max_tokens exactly


def test_a_target_override_of_the_profile_flags_is_checked_on_that_target() -> None:
    text = SUITE.replace("[512, 1024]", "[4096]") + (
        '\n[targets.cpu.profiles.reference]\nflags = { "context-length" = 2048 }\n')
    err = usage_error(text)
    assert "key 'evals.long.lengths': length 4096" in err and "on target cpu" in err
    # raising it in the profile would not help: the override wins
    assert "raise context-length in [targets.cpu.profiles.reference.flags]" in err
    assert parse(text.replace('targets = ["cpu", "mi355x"]', 'targets = ["mi355x"]'))


def test_a_target_override_of_the_lengths_names_the_override() -> None:
    err = usage_error(SUITE + "\n[targets.cpu.evals.long]\nlengths = [20000]\n")
    assert "key 'targets.cpu.evals.long.lengths': length 20000" in err


def test_the_kv_pool_of_the_cpu_target_is_a_limit_too() -> None:
    # the cpu target's sglang max-total-tokens (65536) binds before a larger context-length
    text = SUITE.replace('"context-length" = 8192', '"context-length" = 131072').replace(
        "[512, 1024]", "[100000]")
    err = usage_error(text)
    assert "on target cpu" in err and "max-total-tokens of 65536" in err
    assert "raise max-total-tokens in [profiles.reference.flags]" in err
    assert parse(text.replace('targets = ["cpu", "mi355x"]', 'targets = ["mi355x"]'))


def test_no_context_flag_leaves_the_limit_to_the_model_at_run_time() -> None:
    text = SUITE.replace('flags = { "context-length" = 8192 }', "")
    assert parse(text.replace("[512, 1024]", "[100000]").replace(
        'targets = ["cpu", "mi355x"]', 'targets = ["mi355x"]'))


@pytest.mark.parametrize("value, tokens", [
    (8192, 8192), ("8192", 8192), ("32k", 32000), ("32K", 32768), ("1.5k", 1500),
    (-1, None), ("-1", None), ("auto", None), (True, None), (0, None),
])
def test_flag_tokens(value, tokens) -> None:
    assert flag_tokens(value) == tokens


def test_profile_limit_takes_the_tightest_flag_of_the_engine() -> None:
    flags = {"context-length": 131072, "max-total-tokens": 65536, "max-model-len": 10}
    assert profile_limit(flags, "sglang") == ("max-total-tokens", 65536)
    assert profile_limit(flags, "vllm") == ("max-model-len", 10)
    assert profile_limit({"random-seed": 1}, "sglang") is None


def test_model_context_reads_config_json(tmp_path: Path) -> None:
    assert model_context(tmp_path) is None
    (tmp_path / "config.json").write_text('{"max_position_embeddings": 8192}')
    assert model_context(tmp_path) == ("max_position_embeddings", 8192)
    (tmp_path / "config.json").write_text(
        '{"text_config": {"max_position_embeddings": 4096}, "max_position_embeddings": 1}')
    assert model_context(tmp_path) == ("max_position_embeddings", 4096)
    (tmp_path / "config.json").write_text("[not json")
    assert model_context(tmp_path) is None
