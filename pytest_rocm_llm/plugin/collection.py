"""Test order within a suite: grouped by server profile, so each profile's server is
launched once even where only one fits on the node at a time."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_rocm_llm.config.suite_model import Suite
from pytest_rocm_llm.config.targets import Target


def group_by_profile(items: list[pytest.Item],
                     suite_of: Callable[[pytest.Item], Suite | None]) -> None:
    """Within each run of a suite's tests, order by server profile (stable), so each profile's
    server is launched once even where only one fits on the node at a time."""
    out: list[pytest.Item] = []
    i = 0
    while i < len(items):
        suite = suite_of(items[i])
        j = i + 1
        while j < len(items) and suite_of(items[j]) is suite:
            j += 1
        block = items[i:j]
        if suite is not None:
            rank = {name: n + 1 for n, name in enumerate(suite.profiles)}
            rank[suite.default_profile] = 0

            def key(item: pytest.Item, rank: dict[str, int] = rank) -> int:
                marker = item.get_closest_marker("llm_profile")
                return rank.get(marker.args[0], 0) if marker and marker.args else 0

            block.sort(key=key)
        out.extend(block)
        i = j
    items[:] = out


def tag_xdist_groups(items: list[pytest.Item],
                     suite_of: Callable[[pytest.Item], Suite | None]) -> None:
    """``--dist loadgroup``: give each suite test the ``@group`` nodeid suffix by which the
    xdist controller keeps a group on one worker.

    pytest-xdist 3.8's worker does this by setting ``item._nodeid``, which pytest 9 no longer
    reads (node ids are a structured ``_id``), so its groups were silently dropped and a suite
    ran on both workers, launching each server twice (seen here). Tag them as xdist means to.
    """
    for item in items:
        suite = suite_of(item)
        if suite is None or "@" in item.nodeid:
            continue
        tagged = f"{item.nodeid}@suite-{suite.name}"
        if hasattr(item, "_id"):  # pytest >= 9
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(tagged)
        else:
            item._nodeid = tagged



# Fixtures through which a test reaches a server (llm_server's profile comes from its mark).
SERVER_FIXTURES = frozenset({"llm_server", "llm_client", "llm_servers", "llm_workload",
                             "llm_judge"})


def profiles_needed(item: pytest.Item, suite: Suite, target: Target | None) -> tuple[str, ...]:
    """The server profiles an item declares it needs: a check's workload or evaluation
    profiles (parity and relative checks: both sides), else every profile named in
    ``llm_profile``, else the default profile when it asks for a server at all. A test that
    asks the factory for an undeclared profile still gets it, at the cost of a relaunch if it
    was already stopped."""
    callspec = getattr(item, "callspec", None)
    check = callspec.params.get("llm_check") if callspec is not None else None
    if check is not None:
        if check.eval is not None:
            from pytest_rocm_llm.config.evals import profiles_of

            return tuple(p or suite.default_profile
                         for p in profiles_of(suite.eval_for(check.eval, target)))
        own = (suite.check_profile(check, target),)
        if check.relative_to is None:
            return own
        # A speed ratio also runs its reference workload (once a session: if an earlier test
        # ran it, its server is not asked for again).
        ref = suite.workload_for(check.relative_to, target).profile or suite.default_profile
        return tuple(dict.fromkeys(own + (ref,)))
    marker = item.get_closest_marker("llm_profile")
    if marker is not None and marker.args:
        return tuple(marker.args)
    if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
        return (suite.default_profile,)
    return ()


def last_uses(items: list[pytest.Item], suite_of: Callable[[pytest.Item], Suite | None],
              target: Target | None) -> dict[str, list[tuple[str, str]]]:
    """nodeid -> the (suite, profile) servers that no later item needs, so that on a target
    whose servers share the machine each one stops right after its last test."""
    last: dict[tuple[str, str], str] = {}
    for item in items:
        suite = suite_of(item)
        if suite is None:
            continue
        for profile in profiles_needed(item, suite, target):
            last[(suite.name, profile)] = item.nodeid
    out: dict[str, list[tuple[str, str]]] = {}
    for key, nodeid in last.items():
        out.setdefault(nodeid, []).append(key)
    return out
