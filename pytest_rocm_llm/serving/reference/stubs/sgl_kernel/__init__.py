"""Stand-in for sglang's native kernel package on the CPU reference only.

sglang imports ``sgl_kernel`` (and submodules) at import time, but no CPU build of it is on
PyPI. Plain Llama decode with ``--device cpu --attention-backend torch_native`` calls none of
its ops, so this package lets the import succeed and makes every op raise
NotImplementedError with its name the moment anything calls it: a code path that needs a
native kernel fails loudly, never silently computes something else. sglang's speculative
modes need such kernels, so they cannot run on the CPU reference.

It is put on the server's PYTHONPATH only for ``--rocm-target cpu``; it is never used on GPU.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types

__version__ = "0.0.0+cpu-reference-stub"
IS_ROCM_LLM_STUB = True


class _Missing:
    """A native op or object: attribute access gives another stub (sglang reads e.g.
    ``scalar_types.uint4b8`` at import time), any call raises."""

    def __init__(self, qualname: str) -> None:
        self._qualname = qualname

    def __getattr__(self, name: str) -> _Missing:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _Missing(f"{self._qualname}.{name}")

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"sgl_kernel.{self._qualname} is a native op; the CPU reference has only a stub "
            "sgl_kernel (pytest-rocm-llm), so this code path cannot run on CPU"
        )

    def __repr__(self) -> str:
        return f"<sgl_kernel stub {self._qualname}>"


class _StubModule(types.ModuleType):
    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        prefix = self.__name__.partition(".")[2]
        value = _Missing(f"{prefix}.{name}" if prefix else name)
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes any ``sgl_kernel.<sub>`` importable as another stub module."""

    def find_spec(self, fullname, path, target=None):
        if fullname.startswith("sgl_kernel."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


sys.meta_path.insert(0, _Finder())
# Make this package itself resolve missing attributes the same way.
sys.modules[__name__].__class__ = _StubModule
