"""pytest run as a background process, for cases that signal it (SIGINT, a killed worker)."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest


def start_pytest(pytester: pytest.Pytester, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", "--rocm-target", "cpu", "-s", "-p", "no:cacheprovider",
         *args],
        cwd=pytester.path, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # A background job inherits SIGINT ignored; restore it so SIGINT acts as Ctrl-C.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
