"""A launched server read back: does it run the configuration its profile set? No pytest.

A flag the engine's parser accepted can still be dropped or rewritten while the engine
resolves its arguments (issue 15 item 1), and a run on the wrong configuration must not become
a verdict: a mismatch stops the server before any workload runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import httpx

from pytest_rocm_llm.config.suite_model import Suite
from pytest_rocm_llm.config.targets import Target
from pytest_rocm_llm.serving.engines import get_engine
from pytest_rocm_llm.serving.launch import ConfigProblem
from pytest_rocm_llm.serving.process import ServerDied

if TYPE_CHECKING:
    from pytest_rocm_llm.serving.server import LLMServer


class EffectiveConfigMismatch(ConfigProblem):
    """The running server does not run a flag its profile set (dropped or overridden while
    the engine resolved its arguments)."""


def verify_launched(suite: Suite, target: Target, server: LLMServer,
                    progress: Callable[[str], None]) -> None:
    """Raises (after stopping the server) EffectiveConfigMismatch when a profile's flag is
    not in effect, ServerDied when the resolved arguments cannot be read."""
    from pytest_rocm_llm.serving.effective_config import (
        NOT_VERIFIABLE,
        describe,
        failures,
        verify,
    )
    from pytest_rocm_llm.serving.process import log_tail

    assert server.process is not None
    name = server.name
    resolved_args = getattr(get_engine(server.engine), "resolved_args", None)
    try:
        info = resolved_args(server.base_url) if resolved_args is not None else None
    except (httpx.HTTPError, ValueError) as exc:
        server.process.stop()
        err = ServerDied(f"{name}: ready, but its resolved arguments could not be read "
                         f"({type(exc).__name__}: {exc})", server.log_path,
                         log_tail(server.log_path) if server.log_path else "")
        raise err from None
    if info is None:
        progress(f"[rocm-llm] {name}: effective configuration {NOT_VERIFIABLE} "
                 f"({server.engine} reports no resolved arguments)")
        return
    found = verify(suite.profile_for(server.profile, target, server.build).flags, info)
    unverified = [m.describe() for m in found if not m.fails]
    if unverified:
        progress(f"[rocm-llm] {name}: " + "; ".join(unverified))
    if failures(found):
        server.process.stop()
        mismatch = EffectiveConfigMismatch(describe(
            suite.name, server.profile, server.engine, str(info.get("version", "unknown")),
            suite.file, found) + (f"\nserver log: {server.log_path}"
                                  if server.log_path else ""))
        raise mismatch
