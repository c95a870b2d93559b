"""Test order within a suite: grouped by server profile, so each profile's server is
launched once even where only one fits on the node at a time."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .suite_config import Suite


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
