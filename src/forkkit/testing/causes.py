# SPDX-License-Identifier: Apache-2.0
"""Failures grouped by cause (pure): "41 x cannot reach the Hub: Qwen/X".

A related suite's failures that are facts of the test environment (a model
the Hugging Face Hub must serve, a Triton build the CPU venv lacks) are
grouped, with the exact ``deselect`` lines that keep them out of every run
(``fork.toml [testenv] deselect``); other failures are grouped by their
exception kind. A report says how many and why, never a list id by id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from forkkit.testing.junit import JunitReport

_HUB = re.compile(
    r"huggingface\.co|HF_HUB_OFFLINE|OfflineModeIsEnabled|LocalEntryNotFoundError"
    r"|couldn't connect to|offline mode|Hugging ?Face (Hub|repository)"
    r"|Invalid repository ID or local directory",
    re.I,
)
_REPO = re.compile(r"['\"`]([A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*)['\"`]")
_TRITON = re.compile(r"\btriton\b", re.I)


@dataclass(frozen=True)
class Cause:
    """Failures that share one cause."""

    label: str  # e.g. "cannot reach the Hub: Qwen/Qwen3-0.6B", "AssertionError"
    tests: tuple[str, ...]  # JUnit ids
    environment: bool  # a fact of the test environment: deselect them there

    @property
    def count(self) -> int:
        return len(self.tests)


def cause_of(kind: str, message: str) -> tuple[str, bool]:
    """The label of a failure's cause, and whether the environment is it."""
    if _HUB.search(message):
        repo = next((m for m in _REPO.findall(message) if ":" not in m), "")
        return "cannot reach the Hub" + (f": {repo}" if repo else ""), True
    if _TRITON.search(message):
        return "needs Triton (the CPU venv has none)", True
    return kind or "failed", False


def _unloadable(module: str, cause: str) -> str:
    """A related module pytest cannot import, what it lacks, and what to do
    ([testenv] deselect names tests, and cannot stop an import)."""
    path = module.replace(".", "/") + ".py"
    return (
        f"{path} cannot be collected ({cause or 'import error'}): [testenv] "
        "deselect cannot stop an import; drop it from the fix's related suites "
        f"(forkkit fix related ID --drop {path}) or add what it needs to "
        "[testenv] extra"
    )


def failure_causes(report: JunitReport, ids: Sequence[str]) -> tuple[Cause, ...]:
    """``ids`` (failed tests of ``report``) grouped by cause, most first."""
    groups: dict[tuple[str, bool], list[str]] = {}
    loads = {t.test_id: t for t in report.collection_errors}
    for test_id in ids:
        if test_id in loads:  # a module that cannot be imported: one line each
            key = (_unloadable(test_id, loads[test_id].message), False)
        else:
            t = report.tests.get(test_id)
            key = cause_of(t.kind if t else "", t.message if t else "")
        groups.setdefault(key, []).append(test_id)
    causes = [Cause(label, tuple(tests), env) for (label, env), tests in groups.items()]
    return tuple(sorted(causes, key=lambda c: (-c.count, c.label)))


def deselect_lines(causes: Sequence[Cause], node: Callable[[str], str]) -> list[str]:
    """The lines to paste into ``[testenv] deselect`` for the environment's
    causes: a comment with the cause, then each test's node id."""
    out: list[str] = []
    for cause in causes:
        if cause.environment:
            out.append(f"    # {cause.label}")
            out += [f"    {json.dumps(node(t))}," for t in cause.tests]
    return out


def summary(causes: Sequence[Cause]) -> str:
    """``41 x cannot reach the Hub: Qwen/X; 2 x AssertionError`` (with a
    multiplication sign)."""
    return "; ".join(f"{c.count} \u00d7 {c.label}" for c in causes)
