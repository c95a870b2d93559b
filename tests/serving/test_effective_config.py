"""Effective configuration (issue 15 item 1): each flag a profile set, against what the
launched server reports it resolved. The server side is a ``/server_info`` answer recorded
from the real CPU reference (sglang 0.5.23, suites/smoke ``reference`` on the cpu target)."""

from __future__ import annotations

import json
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite import load_suite, parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.serving.effective_config import failures, verify
from pytest_rocm_llm.serving.launched import EffectiveConfigMismatch
from pytest_rocm_llm.serving.pool import ServerPool
from pytest_rocm_llm.serving.server import LLMServer

ROOT = Path(__file__).resolve().parents[2]
INFO: dict[str, Any] = json.loads(
    (ROOT / "tests/data/sglang-0.5.23-cpu-server_info.json").read_text())
CPU = TARGETS["cpu"]


def described(flags: dict, info: dict | None = None) -> list[str]:
    return [m.describe() for m in failures(verify(flags, INFO if info is None else info))]


def test_the_smoke_reference_profile_verifies_clean_against_its_own_server() -> None:
    suite = load_suite(ROOT / "suites/smoke/suite.toml")
    flags = suite.profile_for("reference", CPU).flags
    assert "watchdog-timeout" in flags and "attention-backend" in flags  # the cpu recipe
    assert verify(flags, INFO) == []


def test_a_dropped_ep_size_is_named() -> None:
    assert described({"ep-size": 8, "tp-size": 1}) == [
        "--ep-size 8 -> ep_size 1 (dropped or overridden)"]


def test_sampling_backend_is_overridden_on_cpu() -> None:
    # platform_hook.handle_cpu_backends: declare_resolution(..., sampling_backend="pytorch")
    # whenever cfg.device == "cpu", whatever the launcher was given.
    assert described({"device": "cpu", "sampling-backend": "flashinfer"}) == [
        "--sampling-backend flashinfer -> sampling_backend pytorch (dropped or overridden)"]


def test_a_must_report_flag_missing_from_the_report_fails_and_others_are_listed() -> None:
    info = {k: v for k, v in INFO.items() if k not in ("kv_cache_dtype", "schedule_policy")}
    found = verify({"kv-cache-dtype": "fp8_e4m3", "schedule-policy": "lpm",
                    "speculative-num-steps": 3}, info)
    assert [(m.flag, m.fails) for m in found] == [
        ("kv-cache-dtype", True), ("schedule-policy", False), ("speculative-num-steps", True)]
    assert found[0].describe() == ("--kv-cache-dtype fp8_e4m3 -> kv_cache_dtype not reported "
                                   "(required for this check)")
    assert found[1].describe() == "--schedule-policy lpm -> schedule_policy not reported " \
                                  "(not verified)"
    assert found[2].describe() == "--speculative-num-steps 3 -> speculative_num_steps None " \
                                  "(dropped or overridden)"


@pytest.mark.parametrize(("flags", "info"), [
    ({"watchdog-timeout": 3600}, {"watchdog_timeout": 3600.0}),   # float field, int flag
    ({"watchdog-timeout": "3600"}, {"watchdog_timeout": 3600.0}),
    ({"context-length": "8Ki"}, {"context_length": 8192}),        # human_readable_int
    ({"max-total-tokens": "65.536k"}, {"max_total_tokens": 65536}),
    ({"expert-parallel-size": 8}, {"ep_size": 8}),                # aliases
    ({"ep": 8}, {"ep_size": 8}),
    ({"tensor-parallel-size": 4}, {"tp_size": 4}),
    ({"enable-hicache": True}, {"enable_hierarchical_cache": True}),
    ({"monokernel-backend": "amd"}, {"enable_amd_monokernel": True}),
    ({"no-enable-tf32-matmul": True}, {"enable_tf32_matmul": False}),  # BooleanOptional
    ({"cuda-graph-bs": ("1", "2", "4")}, {"cuda_graph_bs": [1, 2, 4]}),
    ({"json-model-override-args": '{"a": 1}'}, {"json_model_override_args": {"a": 1}}),
    ({"random-seed": 1234}, {"random_seed": 1234}),
    ({"enable-x": False}, {}),                                    # not on the command line
])
def test_normalization_accepts_what_sglang_reports_for_the_same_value(flags, info) -> None:
    assert verify(flags, info) == []


@pytest.mark.parametrize(("flags", "info"), [
    ({"watchdog-timeout": 3600}, {"watchdog_timeout": 300.0}),
    ({"context-length": "8k"}, {"context_length": 8192}),         # SI k is 1000
    ({"enable-cache-report": True}, {"enable_cache_report": False}),
    ({"no-enable-tf32-matmul": True}, {"enable_tf32_matmul": True}),
    ({"cuda-graph-bs": ("1", "2")}, {"cuda_graph_bs": [1, 2, 4]}),
    ({"tp-size": 8}, {"tp_size": None}),
    ({"tp-size": 8}, {"tp_size": "8x"}),
    ({"monokernel-backend": "amd"}, {"enable_amd_monokernel": False}),
])
def test_a_different_resolved_value_fails(flags, info) -> None:
    assert len(failures(verify(flags, info))) == 1


# -- the pool's launch path ---------------------------------------------------------------

SUITE = """
[suite]
name = "eff"
default_profile = "ok"
[model]
id = "m"
[profiles.ok]
flags = { "context-length" = 8192, "random-seed" = 1234 }
[profiles.overridden]
flags = { "context-length" = 8192, "sampling-backend" = "flashinfer" }
[profiles.other]
engine = "vllm"
flags = { "max-model-len" = 2048 }
"""


@contextmanager
def serving(info: dict) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            data = json.dumps(info).encode()
            self.send_response(200 if self.path == "/server_info" else 404)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class FakeProcess:
    def __init__(self) -> None:
        self.stopped = 0

    def stop(self) -> int:
        self.stopped += 1
        return 0

    def check_alive(self) -> None:
        pass


def pool_for(tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch,
             launched: list[LLMServer], messages: list[str]) -> ServerPool:
    pool = ServerPool(Settings(CPU, None, None, None, 60.0, False, None, "127.0.0.1",
                               tmp_path), tmp_path, messages.append)
    # *_: the pool may pass more (the build a server is launched from)
    monkeypatch.setattr(pool, "_prepare_suite", lambda s, engine, *_: None)

    def launch(s, p, st, *_) -> LLMServer:
        server = LLMServer(s.name, p, url, s.engine_of(p), "m", "/m", (), {}, "0",
                           FakeProcess(), tmp_path / f"{p}.log")  # type: ignore[arg-type]
        launched.append(server)
        return server

    monkeypatch.setattr(pool, "_launch", launch)
    return pool


def test_pool_fails_and_stops_a_server_not_running_its_profile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = parse_suite(tmp_path / "suite.toml", tomllib.loads(SUITE))
    launched: list[LLMServer] = []
    messages: list[str] = []
    with serving(INFO) as url:
        pool = pool_for(tmp_path, url, monkeypatch, launched, messages)
        with pytest.raises(EffectiveConfigMismatch) as info:
            pool.get(suite, "overridden")
        msg = str(info.value)
        assert msg.startswith("eff/overridden: sglang 0.5.23 is not running what the profile "
                              "asked for: --sampling-backend flashinfer -> sampling_backend "
                              "pytorch (dropped or overridden). Fix the profile's flags in "), msg
        assert f"server log: {tmp_path / 'overridden.log'}" in msg
        assert launched[0].process.stopped == 1  # type: ignore[union-attr]
        assert pool.running == []
        # the profile stays failed: the same error at once, no relaunch
        with pytest.raises(EffectiveConfigMismatch):
            pool.get(suite, "overridden")
        assert len(launched) == 1
        # a profile that runs as asked is served
        assert pool.get(suite, "ok") is launched[1]
        assert launched[1].process.stopped == 0  # type: ignore[union-attr]
    # vLLM reports no resolved arguments: said, not passed silently
    pool.get(suite, "other")
    assert any("eff/other: effective configuration not verifiable (vllm reports no "
               "resolved arguments)" in m for m in messages), messages


def test_a_credential_is_never_shown_in_a_mismatch() -> None:
    from pytest_rocm_llm.serving.effective_config import verify

    found = verify({"api-key": "sk-PLANTED-123"}, {"api_key": "sk-OTHER-456"})
    text = " ".join(m.describe() for m in found)
    assert "api-key" in text and "sk-PLANTED" not in text and "sk-OTHER" not in text
