"""A flag check's verdict is kept only beside a completed CPU reference environment, one per
accepted command line, and only for the same script, argv and environment; the parser runs
again for anything else, over the command lines not kept only. The check runs for real here:
a real interpreter in an environment laid out as provision.py leaves it, counting how often
it was started and what it was given."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from pytest_rocm_llm.serving.engines import FLAGCHECK_MARK, run_flag_check

# Stands in for an engine's parser: accepts every argv without "--bad"; counts its starts.
SCRIPT = f"""
import json, os, sys
argvs = json.loads(sys.argv[1])
with open(os.environ["STARTS"], "a") as fh:
    fh.write("x")
with open(os.environ["STARTS"] + ".names", "a") as fh:
    fh.write(" ".join(argvs) + "\\n")
res = {{n: {{"ok": "--bad" not in a, "message": "" if "--bad" not in a else "no --bad",
             "unknown": [] if "--bad" not in a else ["--bad"]}} for n, a in argvs.items()}}
print({FLAGCHECK_MARK!r} + json.dumps({{"version": "9.9", "results": res}}))
"""


@pytest.fixture
def env_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "engines" / "sglang-0.5.23-cpu-0123abcd"
    (d / "bin").mkdir(parents=True)
    os.symlink(sys.executable, d / "bin" / "python")
    (d / ".complete").write_text("built\n")
    monkeypatch.setenv("STARTS", str(tmp_path / "starts"))
    return d


def starts(env_dir: Path) -> int:
    f = env_dir.parent.parent / "starts"
    return len(f.read_text()) if f.exists() else 0


def check(env_dir: Path, argvs: dict, env: dict | None = None, script: str = SCRIPT):
    return run_flag_check((str(env_dir / "bin" / "python"),), script, argvs, env, 60,
                          "demo", "demo")


def test_an_accepted_check_is_kept_and_reused(env_dir: Path) -> None:
    first = check(env_dir, {"a": ["--port", "1"]}, {"X": "1"})
    again = check(env_dir, {"a": ["--port", "1"]}, {"X": "1"})
    assert starts(env_dir) == 1
    assert first[0] == again[0] == "9.9"
    assert [c.ok for c in again[1]] == [True] and again[1][0].kept
    assert not first[1][0].kept


@pytest.mark.parametrize("change", ["argv", "env", "script", "marker"])
def test_anything_the_verdict_depends_on_runs_the_parser_again(env_dir: Path,
                                                               change: str) -> None:
    check(env_dir, {"a": ["--port", "1"]}, {"X": "1"})
    argvs, env, script = {"a": ["--port", "1"]}, {"X": "1"}, SCRIPT
    if change == "argv":
        argvs = {"a": ["--port", "2"]}
    elif change == "env":
        env = {"X": "2"}
    elif change == "script":
        script = SCRIPT + "\n# another engine version's script\n"
    else:  # the environment rebuilt: provision writes its marker anew
        (env_dir / ".complete").write_text("rebuilt\n")
    _, checks = check(env_dir, argvs, env, script)
    assert starts(env_dir) == 2 and not checks[0].kept


def test_a_rejection_is_never_kept(env_dir: Path) -> None:
    _, checks = check(env_dir, {"a": ["--bad"], "b": ["--port", "1"]})
    assert [c.ok for c in checks] == [False, True] and not any(c.kept for c in checks)
    _, checks = check(env_dir, {"a": ["--bad"], "b": ["--port", "1"]})
    assert [c.ok for c in checks] == [False, True] and [c.kept for c in checks] == [False, True]
    assert starts(env_dir) == 2
    assert parsed(env_dir) == ["a b", "a"]  # the second start parsed only the rejected one


def parsed(env_dir: Path) -> list[str]:
    """The profile names each parser start was given, one line per start."""
    return (env_dir.parent.parent / "starts.names").read_text().splitlines()


def test_one_command_line_is_one_entry_whatever_its_profile_or_suite(env_dir: Path) -> None:
    check(env_dir, {"default": ["--port", "1"]})
    # the same command line under another profile name, beside a new one: only the new one
    # starts a parser; the kept one keeps its place in the answer
    _, checks = check(env_dir, {"other": ["--port", "2"], "reference": ["--port", "1"]})
    assert [(c.profile, c.ok, c.kept) for c in checks] == [("other", True, False),
                                                         ("reference", True, True)]
    assert parsed(env_dir) == ["default", "other"]
    _, checks = check(env_dir, {"x": ["--port", "2"], "y": ["--port", "1"]})
    assert all(c.kept for c in checks) and starts(env_dir) == 2


def test_an_environment_not_marked_complete_is_checked_every_time(env_dir: Path) -> None:
    (env_dir / ".complete").unlink()
    check(env_dir, {"a": ["--port", "1"]})
    check(env_dir, {"a": ["--port", "1"]})
    assert starts(env_dir) == 2 and not (env_dir / ".flag-checks").exists()


def test_a_prefix_is_never_kept(env_dir: Path) -> None:
    # `docker exec CTR python3`: nothing here can tell the container was not changed
    prefix = (sys.executable, "-E")
    for _ in range(2):
        run_flag_check((*prefix,), SCRIPT.replace('os.environ["STARTS"]',
                                                  repr(str(env_dir.parent.parent / "starts"))),
                       {"a": ["--port", "1"]}, None, 60, "demo", "demo")
    assert starts(env_dir) == 2


def test_a_secret_in_the_env_is_not_written(env_dir: Path) -> None:
    check(env_dir, {"a": ["--port", "1"]}, {"HF_TOKEN": "hf_supersecretvalue123"})
    (entry,) = (env_dir / ".flag-checks").iterdir()
    assert "hf_supersecretvalue123" not in entry.name + entry.read_text()
    assert json.loads(entry.read_text())["result"]["ok"] is True


def test_an_unreadable_entry_is_checked_again(env_dir: Path) -> None:
    check(env_dir, {"a": ["--port", "1"]})
    (entry,) = (env_dir / ".flag-checks").iterdir()
    entry.write_text("{half")
    _, checks = check(env_dir, {"a": ["--port", "1"]})
    assert starts(env_dir) == 2 and not checks[0].kept
    assert json.loads(entry.read_text())["version"] == "9.9"  # rewritten whole
