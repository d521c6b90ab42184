# SPDX-License-Identifier: Apache-2.0
"""pytest plugin for red/green's guards: marks xpassed tests, reorders tests.

Loaded with ``-p forkkit_guard`` in every run (see
:mod:`forkkit.testing.pytest_run`), inside the test venv: it imports nothing
from forkkit. An xpassed test (xfail-marked, passed) gets the JUnit property
``forkkit_xpassed`` (pytest's JUnit cannot tell it from a pass).
``$FORKKIT_TEST_ORDER`` reorders the collected tests: ``reversed``, or
``random:SEED`` (modules shuffled, and the tests within each module, so a
module's fixtures are still set up once).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import pytest

XPASS_PROPERTY = "forkkit_xpassed"
ORDER_ENV = "FORKKIT_TEST_ORDER"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Iterator[None]:
    outcome: Any = yield
    report = outcome.get_result()
    if report.when == "call" and report.passed and hasattr(report, "wasxfail"):
        item.user_properties.append((XPASS_PROPERTY, "1"))


def _module(item: Any) -> str:
    return str(item.nodeid).split("::", 1)[0]


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    order = os.environ.get(ORDER_ENV, "")
    if order == "reversed":
        items.reverse()
    elif order.startswith("random:"):
        rng = random.Random(order.removeprefix("random:"))
        groups: dict[str, list[Any]] = {}
        for item in items:
            groups.setdefault(_module(item), []).append(item)
        modules = list(groups)
        rng.shuffle(modules)
        items[:] = []
        for name in modules:
            rng.shuffle(groups[name])
            items.extend(groups[name])
