"""Real sglang whose HTTP port is taken while it loads: an infrastructure failure within
seconds of its bind error, with the log tail, and the process tree reaped.

sglang does not exit when its bind fails (its warm-up thread keeps the process alive), so
before the log was watched this waited out the start timeout: 12 minutes in a CI run.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from pytest_rocm_llm.serving.guardian import group_members
from pytest_rocm_llm.serving.ports import claim_port, release_port
from pytest_rocm_llm.serving.process import ServerProcess, ServerStartError
from tests.conftest import reference_launch_spec

pytestmark = pytest.mark.engine


def test_sglang_whose_port_is_taken_while_loading_fails_fast(reference_model_dir: Path,
                                                             tmp_path: Path) -> None:
    port = claim_port("127.0.0.1")
    spec = reference_launch_spec("bind/default", reference_model_dir, port,
                                 tmp_path / "server.log")
    server = ServerProcess(spec, lambda _: None)
    try:
        server.start()
        group = server.pid
        assert group is not None
        with socket.create_server(("127.0.0.1", port)):  # taken after the launch's check
            t0 = time.monotonic()
            with pytest.raises(ServerStartError) as info:
                server.wait_ready()
            waited = time.monotonic() - t0
    finally:
        server.stop()
        release_port(port)
    text = str(info.value)
    assert "bind/default: the server cannot become ready, its log says: " in text
    assert (f"error while attempting to bind on address ('127.0.0.1', {port}): address "
            "already in use") in text
    assert "--- last 50 log lines ---" in text
    assert waited < 300, f"waited {waited:.0f} s: the start timeout, not the bind error"
    assert not group_members(group), "the server's process group outlived the failure"
