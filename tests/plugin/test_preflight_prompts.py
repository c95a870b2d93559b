"""A workload cut from natural text needs its text before any launch: preflight names the
missing GSM8K train set for the checks that read such a workload (a relative check through
either side), and leaves random-id workloads alone. A prompt source that does not exist is a
usage error naming the key."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_rocm_llm.config.suite import parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.errors import ConfigError
from pytest_rocm_llm.plugin.preflight import unjudgeable

CPU = TARGETS["cpu"]


def data(prompts: str) -> dict:
    w = {"kind": "single_stream", "input_tokens": 64, "output_tokens": 8, "requests": 2}
    return {"suite": {"name": "p", "targets": ["cpu"]},
            "model": {"id": "org/m", "reference": "smollm2-135m-instruct"},
            "profiles": {"default": {}},
            "workloads": {"text": {**w, "prompts": prompts}, "ids": w},
            "checks": {
                "speed": {"workload": "text", "metric": "output_speed_tok_s", "min": 1.0,
                          "source": "t"},
                "ratio": {"workload": "ids", "relative_to": "text", "min": 1.0,
                          "metric": "output_speed_tok_s", "source": "t"},
                "ids_only": {"workload": "ids", "metric": "output_speed_tok_s", "min": 1.0,
                             "source": "t"}}}


def test_natural_text_workloads_need_their_data_before_launch(tmp_path: Path) -> None:
    suite = parse_suite(tmp_path / "suite.toml", data("gsm8k"))
    settings = SimpleNamespace(data_dir=tmp_path, gpqa_csv=None, gpqa_sha256=None,
                               endpoint=None, engine_prefix=None, model_path=None)
    lines = unjudgeable([(suite, c) for c in suite.checks_for(CPU)], CPU,
                        settings)  # type: ignore[arg-type]
    assert [ln.split(":")[0] for ln in lines] == ["p/speed", "p/ratio"]
    assert f"GSM8K train set (natural-text prompts): {tmp_path / 'gsm8k/train.jsonl'} " \
           "is missing" in lines[0]
    random_only = parse_suite(tmp_path / "suite.toml", data("random"))
    assert unjudgeable([(random_only, c) for c in random_only.checks_for(CPU)], CPU,
                       settings) == []  # type: ignore[arg-type]


def test_an_unknown_prompt_source_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"workloads.text.prompts.*'prose' is not a prompt "
                                          r"source \(random, gsm8k\)"):
        parse_suite(tmp_path / "suite.toml", data("prose"))
