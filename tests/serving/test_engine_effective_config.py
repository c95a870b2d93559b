"""Effective configuration on the real CPU reference (issue 15 item 1), with one sglang server.

sglang 0.5.23 on ``--device cpu`` overrides ``--sampling-backend`` whatever it was given
(arg_groups/platform_hook.py, handle_cpu_backends: ``declare_resolution(server_args,
"_handle_cpu_backends", sampling_backend="pytorch")``), and its parser accepts
``flashinfer``: the flag check before launch passes, the server starts, and only reading
``/server_info`` back shows the profile is not what runs.
"""

from __future__ import annotations

import re
import time
import tomllib
from pathlib import Path

import pytest

from pytest_rocm_llm.config.settings import Settings
from pytest_rocm_llm.config.suite import load_suite, parse_suite
from pytest_rocm_llm.config.targets import TARGETS
from pytest_rocm_llm.serving.effective_config import verify
from pytest_rocm_llm.serving.engines.sglang import SGLang
from pytest_rocm_llm.serving.guardian import group_members
from pytest_rocm_llm.serving.launched import EffectiveConfigMismatch
from pytest_rocm_llm.serving.pool import ServerPool
from pytest_rocm_llm.serving.server import LLMServer
from tests.conftest import REFERENCE_CACHE, SMOKE_MODEL

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parents[2]


def test_an_overridden_flag_fails_the_profile_and_the_reference_flags_verify_clean(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = TARGETS["cpu"]
    reference = load_suite(ROOT / "suites/smoke/suite.toml").profiles["reference"].flags
    flags = ", ".join(f'"{k}" = {v!r}'.replace("'", '"') for k, v in reference.items())
    suite = parse_suite(tmp_path / "suite.toml", tomllib.loads(
        f'[suite]\nname = "eff"\ndefault_profile = "overridden"\n{SMOKE_MODEL}\n'
        f'[profiles.overridden]\nflags = {{ {flags}, "sampling-backend" = "flashinfer" }}\n'))

    seen: list[dict] = []
    launched: list[LLMServer] = []
    original_args, original_launch = SGLang.resolved_args, ServerPool._launch

    def resolved_args(self, base_url, headers=None):  # the adapter's answer, kept
        seen.append(original_args(self, base_url, headers))
        return seen[-1]

    def launch(self, s, p, state, build):
        launched.append(original_launch(self, s, p, state, build))
        return launched[-1]

    monkeypatch.setattr(SGLang, "resolved_args", resolved_args)
    monkeypatch.setattr(ServerPool, "_launch", launch)
    settings = Settings(cpu, None, None, None, 900.0, False, None, "127.0.0.1",
                        Path(REFERENCE_CACHE))
    messages: list[str] = []
    pool = ServerPool(settings, tmp_path, messages.append)
    try:
        with pytest.raises(EffectiveConfigMismatch) as failed:
            pool.get(suite, "overridden")
        t0 = time.monotonic()
        with pytest.raises(EffectiveConfigMismatch) as again:
            pool.get(suite, "overridden")
        assert again.value is failed.value and time.monotonic() - t0 < 1  # no relaunch
    finally:
        pool.stop_all()
    msg = str(failed.value)
    assert msg.startswith("eff/overridden: sglang 0.5.23 is not running what the profile "
                          "asked for: --sampling-backend flashinfer -> sampling_backend "
                          "pytorch (dropped or overridden)."), msg
    assert "--context-length" not in msg and "--watchdog-timeout" not in msg, msg
    # the server it started is gone, before any workload could run on it
    (server,) = launched
    assert server.process is not None and server.process.proc is None
    pgid = int(next(re.search(r"\(pid (\d+)", m)[1] for m in messages if "loading server" in m))
    deadline = time.monotonic() + 30
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert group_members(pgid) == []
    # the smoke reference profile, as the cpu target runs it, is what that server ran
    (info,) = seen
    assert verify(load_suite(ROOT / "suites/smoke/suite.toml").profile_for(
        "reference", cpu).flags, info) == []
