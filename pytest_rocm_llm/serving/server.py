"""A running server as a test sees it: where it is and what it is. No pytest in here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_rocm_llm.config.builds import INCUMBENT
from pytest_rocm_llm.serving.process import ServerProcess


@dataclass
class LLMServer:
    """What a test gets: where the server is and what it is."""

    suite: str
    profile: str
    base_url: str
    engine: str
    served_model_name: str
    model_path: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    engine_version: str
    process: ServerProcess | None = None  # None when attached to --llm-endpoint
    log_path: Path | None = None
    build: str = INCUMBENT

    @property
    def name(self) -> str:
        """suite/profile, with the build named when it is not the incumbent."""
        tail = "" if self.build == INCUMBENT else f"@{self.build}"
        return f"{self.suite}/{self.profile}{tail}"

    def check_alive(self) -> None:
        if self.process is not None:
            self.process.check_alive()
