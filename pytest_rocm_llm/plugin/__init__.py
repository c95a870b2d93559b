"""The pytest layer, and the only one that imports pytest (``tests/test_layers.py``).

hooks (options, collection, outcomes, terminal summary) · fixtures · judging (one check's
outcome) · state (the run session, one object per run; the mapping of the project's
errors to pytest outcomes) ·
collection (test order by server profile) · preflight · outputs (results file, Allure run
files) · allure · progress · hookspecs. This module is the ``pytest11`` entry point: pytest
registers the hook implementations re-exported here.
"""

from pytest_rocm_llm.plugin.hooks import (
    pytest_addhooks,
    pytest_addoption,
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_generate_tests,
    pytest_runtest_makereport,
    pytest_runtest_setup,
    pytest_runtest_teardown,
    pytest_sessionfinish,
    pytest_terminal_summary,
    pytest_unconfigure,
)

__all__ = [
    "pytest_addhooks", "pytest_addoption", "pytest_collection_finish",
    "pytest_collection_modifyitems", "pytest_configure", "pytest_generate_tests",
    "pytest_runtest_makereport", "pytest_runtest_setup", "pytest_runtest_teardown",
    "pytest_sessionfinish", "pytest_terminal_summary", "pytest_unconfigure",
]
