"""Progress lines that show live, even with output captured or piped (CI logs)."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def progress_writer(config: pytest.Config) -> Callable[[str], None]:
    def write(message: str) -> None:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        capman = config.pluginmanager.get_plugin("capturemanager")
        if tr is None:
            print(message, flush=True)
            return
        if capman is not None:
            with capman.global_and_fixture_disabled():
                tr.write_line(message)
                tr.flush()
        else:
            tr.write_line(message)
            tr.flush()

    return write
