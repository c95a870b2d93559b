"""STAND-IN for a slower build: every forward pass of sglang's model runner takes longer.

A real candidate image that decodes 20% slower cannot be produced on demand here, and what a
configuration change can slow on the CPU reference also slows its start and load (allocation
tracing) or only its prefill (a tiny chunked-prefill size). Loaded into a candidate's engine
processes by putting this folder first on their PYTHONPATH (``sitecustomize`` is imported by
every interpreter at start-up, sglang's spawned scheduler included), it makes each
``ModelRunner.forward`` sleep ``ROCM_LLM_SLOW_FORWARD`` times its own duration after it
returns: the same server, model and outputs, each decode step that much slower, start-up
untouched (only the few warm-up passes are slowed). Unset or 0: nothing is patched.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import os
import sys
import time

FACTOR = float(os.environ.get("ROCM_LLM_SLOW_FORWARD") or 0)
TARGET = "sglang.srt.model_executor.model_runner"


def _slowed(forward):
    @functools.wraps(forward)
    def forward_then_wait(*args, **kwargs):
        t0 = time.perf_counter()
        out = forward(*args, **kwargs)
        time.sleep(FACTOR * (time.perf_counter() - t0))
        return out

    return forward_then_wait


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)  # find the real module, then wrap its loading
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            module.ModelRunner.forward = _slowed(module.ModelRunner.forward)

        spec.loader.exec_module = exec_and_patch
        return spec


if FACTOR > 0:
    sys.meta_path.insert(0, _PatchOnImport())
