# SPDX-License-Identifier: Apache-2.0
"""The red/green proof's result and verdicts (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from forkkit.patches.paths import is_test_path
from forkkit.testing.classify import Classification
from forkkit.testing.junit import JunitReport

STEM = "red_green"
UNTESTED_NOTE = (
    "Non-test files the series changes that red keeps at the fix (not in "
    "fork.toml [fix].runtime_files): "
)


class ProofRun(Protocol):
    """What the verdict reads of a pytest run (a ``testing.suiterun.SuiteRun``)."""

    @property
    def problem(self) -> str: ...


R = TypeVar("R", bound=ProofRun)


@dataclass(frozen=True)
class FileBlob:
    """A tested file's git blob at the upstream base and at the fix."""

    path: str
    role: str  # "runtime" or "test"
    base: str | None
    fix: str | None


@dataclass(frozen=True)
class RelatedVerdict:
    """Related-suite failures on the fix, sorted by how they do on base."""

    regressions: tuple[str, ...] = ()  # pass on base, fail on the fix
    preexisting: tuple[str, ...] = ()  # fail on base as well


@dataclass(frozen=True)
class RedGreenResult(Generic[R]):
    """Everything a reviewer needs to check the proof and what it ran on."""

    title: str
    fork_path: Path
    upstream: str
    upstream_label: str
    upstream_commit: str | None
    base: str
    base_tree: str
    head: str
    head_tree: str
    patches: tuple[tuple[str, str], ...]
    files: tuple[FileBlob, ...]
    related_targets: tuple[tuple[str, str | None], ...]
    tests: tuple[str, ...]
    related_suites: tuple[str, ...]  # requested ones (empty: --no-related)
    pytest_args: tuple[str, ...]
    env_vars: dict[str, str]
    deselected: tuple[str, ...]
    python: str
    red: R
    green: R
    classification: Classification
    related: R | None
    related_base: R | None
    related_verdict: RelatedVerdict
    problems: tuple[str, ...]
    notes: tuple[str, ...]
    parallel: bool
    seconds: float
    out_dir: Path
    node_ids: dict[str, str] = field(default_factory=dict)  # junit id -> node id

    @property
    def valid(self) -> bool:
        return not self.problems

    def node(self, test_id: str) -> str:
        return self.node_ids.get(test_id, test_id)


def untested_changes(changed: Sequence[str], runtime: Sequence[str]) -> list[str]:
    """Changed files that are neither tests nor listed runtime files."""
    return [f for f in changed if f not in runtime and not is_test_path(f)]


def untested_notes(changed: Sequence[str], runtime: Sequence[str]) -> list[str]:
    """The report's note on :func:`untested_changes` (none when there are none)."""
    others = untested_changes(changed, runtime)
    return [UNTESTED_NOTE + ", ".join(others)] if others else []


def failing_ids(report: JunitReport) -> list[str]:
    """Failed and erroring tests, then collection errors."""
    ids = [t.test_id for t in report.tests.values() if t.outcome in ("failed", "error")]
    return ids + [t.test_id for t in report.collection_errors]


def related_verdict(fix: JunitReport, base: JunitReport | None) -> RelatedVerdict:
    """Split the fix's related failures into regressions and pre-existing ones."""
    failing = failing_ids(fix)
    if base is None:
        return RelatedVerdict(regressions=tuple(failing))
    base_bad = set(failing_ids(base))
    pre = tuple(t for t in failing if t in base_bad)
    reg = tuple(t for t in failing if t not in base_bad)
    return RelatedVerdict(regressions=reg, preexisting=pre)


def classification_ids(c: Classification) -> list[str]:
    """Every classified test id, category by category."""
    return [t for ids in c.by_category.values() for t in ids]


def proof_problems(
    red: ProofRun,
    green: ProofRun,
    classification: Classification,
    *,
    files: Sequence[FileBlob],
    related: ProofRun | None,
    verdict: RelatedVerdict,
) -> list[str]:
    """Every reason the proof does not hold (empty: a valid proof)."""
    problems: list[str] = []
    runtime = [f for f in files if f.role == "runtime"]
    if runtime and all(f.base == f.fix for f in runtime):
        problems.append(
            "the fork does not change any runtime file "
            f"({', '.join(f.path for f in runtime)}): red and green test the same code"
        )
    for run in (red, green, related):
        if run is not None and run.problem:
            problems.append(run.problem)
    problems += classification.problems
    problems = list(dict.fromkeys(problems))  # green shares the fix run's problem
    if related is not None and verdict.regressions:
        problems.append(
            f"related suites: {len(verdict.regressions)} test(s) fail on the fix "
            f"but not on base (PASS_TO_FAIL), e.g. {verdict.regressions[0]}"
        )
    return problems
