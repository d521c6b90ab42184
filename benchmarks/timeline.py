# SPDX-License-Identifier: Apache-2.0
"""Where a ``forkkit red-green`` run's time went, read from its report folder.

For each pytest process (red, and the run on the fix or its shards): when it
started (from the run's ``started_at``), its wall time, and its phases from
its JUnit XML: start-up until pytest's session began (the interpreter, torch
and vLLM imported by conftest.py), collection (the session before the first
test's time), the tests themselves, and the rest (teardown, exit). Idle
core-seconds are what the cores could have done and did not: cores x wall
minus the CPU the command's processes used.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Phase:
    """One pytest process of a red-green run."""

    name: str
    start: float  # seconds after the command's first run started
    wall: float
    startup: float  # until pytest's session began
    collection: float
    tests: float

    @property
    def rest(self) -> float:
        return max(self.wall - self.startup - self.collection - self.tests, 0.0)


def _junit_times(path: Path) -> tuple[float, float, float]:
    """(session start epoch, session seconds, tests' seconds) of a JUnit XML."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    stamps = [
        datetime.fromisoformat(s.get("timestamp", "")).timestamp()
        for s in suites
        if s.get("timestamp")
    ]
    session = sum(float(s.get("time", "0") or 0) for s in suites)
    tests = sum(float(c.get("time", "0") or 0) for c in root.iter("testcase"))
    return (min(stamps) if stamps else 0.0), session, tests


def _processes(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs that were pytest processes of their own: the related run (or
    its shards, one of which may be a fix's green standing in for its file),
    the fix's green, and red unless it is green (guard mode); each process
    once (by its start and its log's name)."""
    related = doc.get("related") or {}
    runs = list(related.get("shards") or ([related] if related else []))
    for run in (doc.get("green") or {}, doc.get("red") or {}):
        if run:
            runs.append(run)
    seen: set[tuple[float, str]] = set()
    out = []
    for r in runs:
        key = (r.get("started_at", 0.0), Path(str(r.get("log", ""))).name)
        if r.get("started_at") and key not in seen:
            seen.add(key)
            out.append(r)
    return out


def _fix_runs(out: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every process of every fix's report under ``out`` (``summary.json``
    names the fixes), with the folder its JUnit lies in; a run shared by
    several fixes is counted where it ran (a cached one has no start)."""
    summary = json.loads((out / "summary.json").read_text())
    found: list[tuple[Path, dict[str, Any]]] = []
    for row in summary["fixes"]:
        folder = out / row["fix"]
        doc = json.loads((folder / "red_green.json").read_text())
        found += [(folder, r) for r in _processes(doc)]
    return found


def phases(out: Path) -> list[Phase]:
    """The processes of the red-green reports in ``out``, in start order."""
    runs = _fix_runs(out)
    if not runs:
        return []
    t0 = min(r["started_at"] for _, r in runs)
    out_rows = []
    for folder, run in sorted(runs, key=lambda fr: fr[1]["started_at"]):
        session_start, session, tests = _junit_times(folder / run["junit"])
        startup = max(session_start - run["started_at"], 0.0) if session_start else 0.0
        out_rows.append(
            Phase(
                name=run["name"],
                start=run["started_at"] - t0,
                wall=run["wall_seconds"],
                startup=startup,
                collection=max(session - tests, 0.0),
                tests=tests,
            )
        )
    return out_rows


def rows(found: list[Phase]) -> list[list[str]]:
    """A Markdown table's rows: one per process."""
    return [
        [
            p.name,
            f"{p.start:.1f}",
            f"{p.wall:.1f}",
            f"{p.startup:.1f}",
            f"{p.collection:.1f}",
            f"{p.tests:.1f}",
            f"{p.rest:.1f}",
        ]
        for p in found
    ]


HEADERS = ["Process", "Starts at s", "Wall s", "Start-up s", "Collection s"]
HEADERS += ["Tests s", "Rest s"]
