# SPDX-License-Identifier: Apache-2.0
"""One pytest run on the fix, read as several: green is a subset of it.

The related suites plus the focused tests run once on the fix; green's
outcomes are the focused tests' cases of that run, picked by pytest node id
and written as their own JUnit XML (``red_green_green.xml``), so each run
keeps its per-test JUnit.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from forkkit.patches.testids import covers, node_id
from forkkit.testing.forkruns import SuiteRun
from forkkit.testing.junit import parse_junit_text, subset_xml
from forkkit.workdir import published_path


def fix_targets(suites: Sequence[str], focused: Sequence[str]) -> list[str]:
    """The one run on the fix: the suites, plus focused targets they lack."""
    extra = [f for f in focused if not any(covers(s, f) for s in suites)]
    return [*suites, *dict.fromkeys(extra)]


def _wanted(test_id: str, targets: Sequence[str], tracked: frozenset[str]) -> bool:
    node = node_id(test_id, tracked)
    return node is not None and any(covers(t, node) for t in targets)


def subset_run(
    fix: SuiteRun,
    *,
    name: str,
    targets: Sequence[str],
    tracked: frozenset[str],
    out_dir: Path,
) -> SuiteRun:
    """``fix`` restricted to ``targets``, with its own JUnit XML in ``out_dir``."""
    run = dataclasses.replace(fix.run, args=tuple(targets))
    if fix.report is None:
        return dataclasses.replace(fix, name=name, run=run)
    src = fix.run.junit
    keep = [
        t
        for t in [*fix.report.tests, *(c.test_id for c in fix.report.collection_errors)]
        if _wanted(t, targets, tracked)
    ]
    xml = subset_xml(src.read_text(), keep)
    junit = out_dir / f"{name}.xml"
    junit.write_text(xml)
    report = parse_junit_text(xml, str(published_path(junit)))
    run = dataclasses.replace(run, junit=junit)
    return dataclasses.replace(fix, name=name, run=run, report=report, shards=())
