"""One log-tail function with one default length, for every failure that quotes a log or a
command's output."""

from __future__ import annotations

from pathlib import Path

from pytest_rocm_llm.log_tail import TAIL_LINES, file_tail, text_tail
from pytest_rocm_llm.redact import MASK


def test_file_and_text_tails_agree_on_the_default_length(tmp_path: Path) -> None:
    text = "".join(f"line {i}\n" for i in range(TAIL_LINES * 3))
    log = tmp_path / "server.log"
    log.write_text(text)
    tail = file_tail(log)
    assert tail == text_tail(text)
    assert tail.splitlines() == [f"line {i}" for i in range(TAIL_LINES * 2, TAIL_LINES * 3)]


def test_a_short_log_comes_whole_and_an_unreadable_one_empty(tmp_path: Path) -> None:
    log = tmp_path / "short.log"
    log.write_bytes(b"one\ntwo \xff\n")
    assert file_tail(log) == "one\ntwo \ufffd"
    assert file_tail(tmp_path / "missing.log") == ""
    assert file_tail(log, 1) == text_tail("one\ntwo \ufffd", 1) == "two \ufffd"


def test_the_tail_is_masked(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("server_args api_key='sk-abcdef'\n")
    assert file_tail(log, secrets=["sk-abcdef"]) == f"server_args api_key='{MASK}'"
