"""Hooks other plugins (reporting, dashboards) may implement."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_rocm_llm.serving.server import LLMServer

hookspec = pytest.hookspec


@hookspec
def pytest_rocm_llm_server_ready(config: pytest.Config, server: LLMServer) -> None:
    """A server was launched (or attached to) and answers its health check."""


@hookspec
def pytest_rocm_llm_server_stopped(config: pytest.Config, server: LLMServer,
                                   exit_code: int | None) -> None:
    """A server this run launched was stopped."""
