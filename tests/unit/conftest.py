# SPDX-License-Identifier: Apache-2.0
"""The unit tests' toy pytest runs load no installed plugin of their own."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _toy_runs_autoload_no_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The toy suites need no pytest plugin, and the interpreter they run
    with is this one, whose plugins (hypothesis, xdist, timeout) take most of
    a toy run's second to load. forkkit's own plugins are named with ``-p``
    and still load. (The integration tests run vLLM's suites as CI does.)"""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture(autouse=True)
def _toy_venv_unless_a_test_names_another(monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit test never builds a real venv by accident (``fix add`` checks
    its suites in one): the toy interpreter, unless the test sets another
    or removes it."""
    import os

    from tests.synthetic import toy_testenv_python

    if not os.environ.get("FORKKIT_TESTENV_PYTHON"):
        monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
