#!/usr/bin/env python3
"""A stand-in for docker/podman's command line, for fast tests of serving/container.py
(no daemon is needed to check what the plugin asks of a runtime). It keeps its containers
in $FAKE_RUNTIME_STATE (JSON: name -> labels) and logs every call to $FAKE_RUNTIME_STATE.log.
``run`` registers the container and stays in the foreground, as an attached run does, until
the container is removed; ``stop`` and ``rm -f`` remove it; ``ps -a`` and ``inspect`` list.
``image inspect`` describes any image as pulled from a registry."""

import json
import os
import sys
import time

STATE = os.environ["FAKE_RUNTIME_STATE"]


def load() -> dict:
    try:
        with open(STATE) as fh:
            return json.load(fh)
    except FileNotFoundError:
        return {}


def save(state: dict) -> None:
    with open(STATE + ".tmp", "w") as fh:
        json.dump(state, fh)
    os.replace(STATE + ".tmp", STATE)


args = sys.argv[1:]
with open(STATE + ".log", "a") as fh:
    fh.write(json.dumps(args) + "\n")
state = load()
if args[0] == "run":
    name = args[args.index("--name") + 1]
    labels = dict(args[i + 1].split("=", 1)[0].rsplit(".", 1)[-1:] + args[i + 1].split("=", 1)[1:]
                  for i, a in enumerate(args) if a == "--label")
    state[name] = labels
    save(state)
    while name in load():
        time.sleep(0.05)
elif args[0] in ("stop", "rm"):
    for name in args[1:]:
        state.pop(name, None)
    save(state)
elif args[0] == "ps":
    print("\n".join(state))
elif args[:2] == ["image", "inspect"]:  # a registry image: its id and one digest
    print(f'sha256:1d {json.dumps([args[-1].split(":")[0] + "@sha256:d1"])}')
elif args[0] == "inspect":
    for name in args[3:]:
        lab = state[name]
        print(f"/{name} {lab.get('owner-pid', '')} {lab.get('host', '')}")
