"""The accuracy evals end to end against the real CPU sglang (SmolLM2-135M-Instruct):
6 GSM8K and 10 arithmetic items through the chat sampler and the runner. The result must be
well-formed (every request answered, items scored, rates are numbers); the tiny model's
score is not asserted here (suites set CPU floors from measured runs)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_rocm_llm.client.chat import ChatAnswer, ChatSampler
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.correctness.accuracy import arithmetic, gsm8k
from pytest_rocm_llm.correctness.accuracy.runner import run_accuracy_sync
from pytest_rocm_llm.serving.engines.sglang import SGLang
from pytest_rocm_llm.serving.ports import claim_port, release_port
from pytest_rocm_llm.serving.process import LaunchSpec, ServerProcess
from tests.conftest import REFERENCE_CACHE

pytestmark = pytest.mark.engine

DATA_DIR = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
SERVED = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def cpu_server(reference_model_dir: Path, tmp_path_factory) -> Iterator[str]:
    from pytest_rocm_llm.serving.reference.provision import STUBS, ensure_engine

    python = ensure_engine(Path(REFERENCE_CACHE))
    target = TARGETS["cpu"]
    port = claim_port()
    # sglang's scheduler watchdog (300 s) kills the server when one batch takes longer,
    # which happens on a shared, overloaded CPU host: this test is about well-formed results.
    flags = {**target.engine_flags["sglang"], "random-seed": 1, "watchdog-timeout": 3600}
    argv = SGLang().launch_argv([str(python)], str(reference_model_dir), SERVED, "127.0.0.1",
                                port, flags)
    # 1800 s: the plugin's default; loads take minutes on a busy shared host.
    spec = LaunchSpec(name="evals/cpu", argv=tuple(argv),
                      env={**target.env, "PYTHONPATH": str(STUBS)}, host="127.0.0.1",
                      port=port, health_path=SGLang.health_path,
                      log_path=tmp_path_factory.mktemp("evals") / "server.log",
                      start_timeout_s=1800)
    try:
        with ServerProcess(spec, print) as server:
            yield server.base_url
    finally:
        release_port(port)


def test_gsm8k_and_arithmetic_results_are_well_formed(cpu_server: str) -> None:
    if not (DATA_DIR / "gsm8k" / "test.jsonl").is_file():
        pytest.skip(f"GSM8K data not at {DATA_DIR}")
    lines: list[str] = []
    runs = {
        "gsm8k": gsm8k.build(DATA_DIR, limit=6, shots=0, seed=0),
        "arithmetic": arithmetic.build(count=10, shots=0, seed=0),
    }
    for kind, items in runs.items():
        sampler = ChatSampler(cpu_server, SERVED, max_tokens=64, seed=0, timeout_s=1800)
        result = run_accuracy_sync(items, sampler, concurrency=10, progress=lines.append,
                                   name=kind, kind=kind)
        m = result.metrics
        assert result.problems == (), result.problems
        assert m["failed_requests"] == 0 and m["n"] == len(items) == len(result.records)
        assert 0.0 <= m["invalid_rate"] <= 1.0 and 0.0 <= m["accuracy"] <= 1.0
        assert m["correct"] == sum(r["correct"] for r in result.records)
        assert not math.isnan(m["stderr"])
        # every answer came back with a finish reason and some generated text
        assert all(r["finish_reason"] in ("stop", "length") for r in result.records)
        assert all(r["response"] for r in result.records)
    assert any("6/6 items (100%)" in line for line in lines), lines


def test_a_rejected_request_is_a_failed_sample(cpu_server: str) -> None:
    # A message role sglang's request model does not accept: the real server answers 4xx.
    async def ask() -> ChatAnswer:
        async with ChatSampler(cpu_server, SERVED, max_tokens=4) as sampler:
            return await sampler([{"role": "narrator", "content": "hi"}])

    sample = asyncio.run(ask())
    assert not sample.ok and sample.error.startswith("HTTP 4"), sample
