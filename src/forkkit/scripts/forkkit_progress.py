# SPDX-License-Identifier: Apache-2.0
"""pytest plugin: one line per finished test, appended to $FORKKIT_PROGRESS_FILE.

Loaded with ``-p forkkit_progress`` from this folder on PYTHONPATH, inside the
test venv: it imports nothing from forkkit. Lines: ``collected N`` once, then
``start NODEID`` when a test starts and ``OUTCOME NODEID`` when it is done
(passed, failed, error, skipped).
"""

from __future__ import annotations

import os
from typing import Any

_PATH = os.environ.get("FORKKIT_PROGRESS_FILE", "")
_WORST: dict[str, str] = {}
_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}


def _write(line: str) -> None:
    if _PATH:
        with open(_PATH, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


def pytest_collection_finish(session: Any) -> None:
    _write(f"collected {len(session.items)}")


def pytest_runtest_logstart(nodeid: str, location: Any) -> None:
    _write(f"start {nodeid}")


def pytest_runtest_logreport(report: Any) -> None:
    outcome = str(report.outcome)
    if outcome == "failed" and report.when != "call":
        outcome = "error"
    old = _WORST.get(report.nodeid, "passed")
    if _RANK.get(outcome, 0) > _RANK.get(old, 0):
        old = outcome
    _WORST[report.nodeid] = old


def pytest_runtest_logfinish(nodeid: str, location: Any) -> None:
    _write(f"{_WORST.pop(nodeid, 'passed')} {nodeid}")
