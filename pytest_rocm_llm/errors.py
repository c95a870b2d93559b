"""The project's errors, by what the run should do about them.

No pytest in here: the domain modules raise these, and only the plugin layer turns them into
pytest outcomes, so the pytest-free entry points (``python -m pytest_rocm_llm.performance``)
never load pytest. Each module keeps its own named error (``pool.SuiteUnavailable``,
``server.ServerError``, ...) as a subclass of one of the categories below; an error that
several modules raise lives here (``DatasetUnavailable``: the accuracy datasets and the Hub).
"""

from __future__ import annotations


class RocmLlmError(Exception):
    """Anything pytest-rocm-llm raises on purpose."""


class ConfigError(RocmLlmError):
    """The user's input is wrong: suite.toml, an option, a baseline or signatures file. The
    message names the file (or option), the dotted key and the fix; the plugin stops the
    run with it as a pytest usage error, word for word."""


class Unavailable(RocmLlmError):
    """The suite or evaluation cannot run here (no model, no dataset, another target): the
    plugin skips the test with the message as the reason."""


class InfrastructureError(RocmLlmError):
    """Provisioning, the engine or the server failed: never a verdict on speed or accuracy.
    The plugin fails the test with the message (and the server's log tail)."""


class VerdictFailure(RocmLlmError, AssertionError):
    """A check judged the build and it fell short (floor, baseline, precondition): the test
    fails as an assertion, with the message leading with what broke."""


class DatasetUnavailable(Unavailable):
    """A dataset file is missing or is not the expected release; ``reason`` says which."""

    @property
    def reason(self) -> str:
        return str(self)
