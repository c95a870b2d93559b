"""Flag-check verdicts kept beside an engine environment that cannot change under them.

Running an engine's own argument parser costs one interpreter start that imports the engine
(10-20 s for sglang or vLLM on the CPU reference). A verdict depends only on the environment,
the check script, the argv checked and the environment variables passed, so where the
environment is immutable the verdict is kept and reused: the CPU reference's environments,
whose directory names carry the engine version and the digest of their pinned requirements
and which are marked ``.complete`` once and never written after (serving/reference/
provision.py). Any other interpreter (a user's --llm-engine-python, a container prefix) is
checked every time: nothing here can tell it was not upgraded in place. Only accepted
command lines are kept, so a rejection is always the parser's word of this run.

One entry per command line, not per suite: a profile's verdict does not depend on the other
profiles checked beside it or on the profile's name, so the same command line in another suite
(the test suite's many ``[profiles.default]``) is the same entry, and a parser starts only for
the command lines not kept yet. Entries are named by a digest of what they depend on and hold
no argv or environment value (a secret passed in ``env`` is hashed into the name, never written
out). No pytest in here.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

COMPLETE_MARK = ".complete"  # provision.py's marker of a finished environment
DIRNAME = ".flag-checks"
VERSION = 2  # of the entries' shape; a change makes older entries unreachable


def _immutable_env_dir(prefix: Sequence[str]) -> Path | None:
    """The environment directory of ``prefix`` when it is a lone interpreter of a completed
    CPU reference environment (``<env>/bin/python``), else None."""
    if len(prefix) != 1:
        return None
    python = Path(prefix[0])
    if python.parent.name != "bin":
        return None
    env_dir = python.parent.parent
    return env_dir if (env_dir / COMPLETE_MARK).is_file() else None


def entry_path(prefix: Sequence[str], script: str, argv: Sequence[str],
               env: Mapping[str, str] | None) -> Path | None:
    """Where the verdict on one command line is kept, or None when it must not be kept."""
    env_dir = _immutable_env_dir(prefix)
    if env_dir is None:
        return None
    marker = (env_dir / COMPLETE_MARK).read_bytes()
    key = json.dumps([VERSION, str(env_dir), marker.hex(), script, list(argv),
                      sorted((env or {}).items())], sort_keys=True)
    return env_dir / DIRNAME / (hashlib.sha256(key.encode()).hexdigest() + ".json")


def load(path: Path | None) -> dict | None:
    """A kept verdict ({"version", "result"}), or None (none kept, or unreadable)."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = (isinstance(data, dict) and isinstance(data.get("result"), dict)
          and data["result"].get("ok") is True and isinstance(data.get("version"), str))
    return data if ok else None


def store(path: Path | None, version: str, result: dict) -> None:
    """Keep an accepted verdict, atomically (a reader never sees half a file); a failure to
    write only costs the next run a parser start."""
    if path is None or result.get("ok") is not True:
        return
    try:
        path.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump({"version": version, "result": result}, fh)
        os.replace(tmp, path)
    except OSError:
        return
