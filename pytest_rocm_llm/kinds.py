"""One registry mechanism for every kind a suite or a target names: platforms, engines,
workloads, evaluations and outputs.

A kind is one self-describing object (its name, what it reads, what it produces, with which
units and noise). The built-in ones are named as entry points are, ``"module:attribute"``,
and loaded on first use, so reading a suite never imports a runner, numpy or an HTTP stack;
another package adds a kind through the registry's entry point group (``[project.entry-points.
"pytest_rocm_llm.workloads"]`` and so on), loaded the same way. A built-in name wins over a
plug-in of the same name: an installed package cannot silently replace what a suite means.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from importlib import metadata
from typing import Generic, TypeVar

from pytest_rocm_llm.errors import ConfigError

T = TypeVar("T")


def load(reference: str) -> object:
    """The object a ``"module:attribute"`` reference names (entry point syntax)."""
    return metadata.EntryPoint(name="", value=reference, group="").load()


class Registry(Generic[T]):
    """Kinds by name: ``built_in`` (name -> ``"module:attribute"``), then the group's."""

    def __init__(self, noun: str, group: str, built_in: Mapping[str, str],
                 key: str = "name") -> None:
        self.noun = noun  # what one is, in errors: "a workload"
        self.group = group
        self.key = key  # the attribute that names a kind ("name"; a platform's "kind")
        self._built_in = dict(built_in)

    # Once per process and registry: scanning the entry points reads every installed
    # distribution's metadata.
    @functools.cached_property
    def _references(self) -> dict[str, str]:
        found = dict(self._built_in)
        for ep in metadata.entry_points(group=self.group):
            found.setdefault(ep.name, ep.value)
        return found

    def names(self) -> tuple[str, ...]:
        return tuple(self._references)

    def __contains__(self, name: object) -> bool:
        return name in self._references

    def __iter__(self) -> Iterator[T]:
        return (self.get(name) for name in self._references)

    def get(self, name: str) -> T:
        """The kind called ``name``; a ConfigError naming the known ones and the group."""
        if name not in self._references:
            raise ConfigError(f"{name!r} is not {self.noun} kind ({', '.join(self.names())}); a "
                              f"package adds one through the {self.group!r} entry point group")
        return self._load(name)

    @functools.cache  # noqa: B019 - registries live as long as the process
    def _load(self, name: str) -> T:
        kind = load(self._references[name])
        if getattr(kind, self.key, None) != name:
            raise ConfigError(f"the {self.group!r} entry point {name!r} loads a kind named "
                              f"{getattr(kind, self.key, None)!r}; name the entry point as the "
                              f"kind")
        return kind  # type: ignore[return-value]
