# SPDX-License-Identifier: Apache-2.0
"""One pytest run on the fix, read as several: green is a subset of it.

The related suites plus the focused tests run once on the fix; green's
outcomes are the focused tests' cases of that run, picked by pytest node id
and written as their own JUnit XML (``red_green_green.xml``), so each run
keeps its per-test JUnit.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path

from forkkit.testing.junit import parse_junit_text
from forkkit.testing.suiterun import SuiteRun


def node_id(test_id: str, files: set[str] | frozenset[str]) -> str | None:
    """pytest node id of a JUnit id (``pkg.mod.Class::name``), given the files.

    A collection error's id is the bare module (``pkg.mod``): its path is
    returned. None when no tracked file matches.
    """
    cls, sep, name = test_id.partition("::")
    parts = cls.split(".")
    for i in range(len(parts), 0, -1):
        path = "/".join(parts[:i]) + ".py"
        if path in files:
            return "::".join([path, *parts[i:], *([name] if sep else [])])
    return None


def covers(target: str, node: str) -> bool:
    """Whether pytest target ``target`` (a folder, file or node id) selects ``node``."""
    t = target.rstrip("/")
    if t in ("", "."):
        return True
    return node == t or node.startswith((f"{t}::", f"{t}/", f"{t}["))


def fix_targets(suites: Sequence[str], focused: Sequence[str]) -> list[str]:
    """The one run on the fix: the suites, plus focused targets they lack."""
    extra = [f for f in focused if not any(covers(s, f) for s in suites)]
    return [*suites, *dict.fromkeys(extra)]


def _wanted(test_id: str, targets: Sequence[str], tracked: frozenset[str]) -> bool:
    node = node_id(test_id, tracked)
    return node is not None and any(covers(t, node) for t in targets)


def _subset_xml(xml: str, keep: Iterable[str]) -> str:
    """The JUnit XML with only the testcases whose id is in ``keep``."""
    wanted = set(keep)
    root = ET.fromstring(xml)
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    for suite in suites:
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        seconds = 0.0
        for case in list(suite.findall("testcase")):
            cls, name = case.get("classname", ""), case.get("name", "")
            if (f"{cls}::{name}" if cls else name) not in wanted:
                suite.remove(case)
                continue
            counts["tests"] += 1
            seconds += float(case.get("time", "0") or 0)
            tags = {child.tag for child in case}
            counts["failures"] += "failure" in tags
            counts["errors"] += "error" in tags
            counts["skipped"] += "skipped" in tags
        for attr, n in counts.items():
            suite.set(attr, str(n))
        suite.set("time", f"{seconds:.3f}")
    return ET.tostring(root, encoding="unicode")


def subset_run(
    fix: SuiteRun,
    *,
    name: str,
    targets: Sequence[str],
    tracked: frozenset[str],
    out_dir: Path,
    shown_dir: Path,
) -> SuiteRun:
    """``fix`` restricted to ``targets``, with its own JUnit XML in ``out_dir``."""
    run = dataclasses.replace(fix.run, args=tuple(targets))
    if fix.report is None:
        return dataclasses.replace(fix, name=name, run=run)
    src = out_dir / fix.run.junit.name
    keep = [
        t
        for t in [*fix.report.tests, *(c.test_id for c in fix.report.collection_errors)]
        if _wanted(t, targets, tracked)
    ]
    xml = _subset_xml(src.read_text(), keep)
    junit = out_dir / f"{name}.xml"
    junit.write_text(xml)
    report = parse_junit_text(xml, str(shown_dir / junit.name))
    run = dataclasses.replace(run, junit=shown_dir / junit.name)
    return dataclasses.replace(fix, name=name, run=run, report=report)
