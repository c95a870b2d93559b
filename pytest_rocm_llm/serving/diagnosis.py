"""What a failure was, in words: infrastructure (with the log tail) versus a verdict, and the
known failure signatures found in the server logs."""

from __future__ import annotations

from pathlib import Path


def diagnosis(signatures_file: Path | None, logs: list[Path | None]) -> str:
    """Known failure signatures found in the given server logs, one paragraph each."""
    from pytest_rocm_llm.redact import redact_text
    from pytest_rocm_llm.serving.process import log_secrets
    from pytest_rocm_llm.serving.signatures import load, scan_log

    sigs = load(signatures_file)
    # A hit quotes its log line, which may be the engine echoing its credentials.
    return "\n".join(redact_text(hit.describe(), log_secrets(log))
                     for log in logs for hit in scan_log(log, sigs))


def infrastructure_errors() -> tuple[type[Exception], ...]:
    from pytest_rocm_llm.errors import InfrastructureError

    return (InfrastructureError, OSError)


def infrastructure_failure(signatures_file: Path | None, exc: Exception) -> str:
    """The message of a setup/serving failure: never a verdict on speed or accuracy, with
    the log tail, and any known signature in the server's log first."""
    from pytest_rocm_llm.redact import redact_text
    from pytest_rocm_llm.serving.process import log_secrets

    log = getattr(exc, "log_path", None)
    found = diagnosis(signatures_file, [log])
    lead = f"known failure signature:\n{found}\n" if found else ""
    # Whoever built the error may have quoted the log without masking it. The lead is
    # verdicts.status.Category.INFRASTRUCTURE's (serving sits below verdicts; a test holds
    # the two equal).
    return redact_text(f"infrastructure: {lead}{exc}", log_secrets(log))
