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
