# SPDX-License-Identifier: Apache-2.0
"""pytest plugin for red/green's guards: marks xpassed tests, reorders tests.

Loaded with ``-p forkkit_guard`` in every run (see
:mod:`forkkit.testing.pytest_run`), inside the test venv: it imports nothing
from forkkit. An xpassed test (xfail-marked, passed) gets the JUnit property
``forkkit_xpassed`` (pytest's JUnit cannot tell it from a pass).
``$FORKKIT_TEST_ORDER`` reorders the collected tests: ``reversed``, or
``random:SEED`` (modules shuffled, and the tests within each module, so a
module's fixtures are still set up once).

Once pytest is done (every report written, its own clean-up run), the
interpreter ends at once with pytest's exit status: tearing down torch and
vLLM's modules and running their exit handlers takes about 2 s per run and
changes no result. What a test left running is ended by forkkit with the
run's process group (:mod:`forkkit.testing.logged`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import random
import sys
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


_SESSIONS: dict[int, Any] = {}  # id(config) -> its session


def pytest_sessionstart(session: Any) -> None:
    _SESSIONS[id(session.config)] = session


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: Any) -> None:
    """After pytest's last report: end the process as soon as pytest has
    returned (an exit handler registered last runs first), with pytest's
    exit status (the session's, as pytest returns it)."""
    session = _SESSIONS.pop(id(config), None)
    if session is None:
        return  # no session ran (a usage error): exit as pytest does

    def quick_exit() -> None:
        status = int(session.exitstatus)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).fflush(None)  # C stdio: torch's own output
        os._exit(status)

    atexit.register(quick_exit)
