"""What a failure was, in words: infrastructure (with the log tail) versus a verdict, and the
known failure signatures found in the server logs."""

from __future__ import annotations

from pathlib import Path


def diagnosis(signatures_file: Path | None, logs: list[Path | None]) -> str:
    """Known failure signatures found in the given server logs, one paragraph each."""
    from .signatures import load, scan_log

    sigs = load(signatures_file)
    hits = [hit for log in logs for hit in scan_log(log, sigs)]
    return "\n".join(hit.describe() for hit in hits)


def infrastructure_errors() -> tuple[type[Exception], ...]:
    from .engines import EngineError
    from .prompts import TokenizerUnavailable
    from .reference.provision import ProvisionError
    from .server import ServerError

    return (ServerError, EngineError, ProvisionError, TokenizerUnavailable, OSError)


def infrastructure_failure(signatures_file: Path | None, exc: Exception) -> str:
    """The message of a setup/serving failure: never a verdict on speed or accuracy, with
    the log tail, and any known signature in the server's log first."""
    found = diagnosis(signatures_file, [getattr(exc, "log_path", None)])
    lead = f"known failure signature:\n{found}\n" if found else ""
    return f"infrastructure: {lead}{exc}"
