# SPDX-License-Identifier: Apache-2.0
"""The red/green proof's result and verdicts (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Literal, Protocol, TypeVar

from forkkit.patches.fixes import Fix
from forkkit.patches.paths import is_runtime_path
from forkkit.patches.retired import RETIRED_FILE
from forkkit.patches.testids import covers, node_id, target_file
from forkkit.pin import PinDoc
from forkkit.services.proof.recipe import RUNTIME_FROM_BASE, RedRecipe
from forkkit.testing.classify import (
    Classification,
    GuardFinding,
    classify,
    run_problems,
)
from forkkit.testing.junit import JunitReport

STEM = "red_green"  # the report folder and file stem (workdir.PROOF_STEM)
# "red-green": red on base runtime, green on the fix; "guard": a tests-only
# series (the fix is upstream's), its tests run once on the pin and must pass.
Mode = Literal["red-green", "guard"]
UPSTREAM_BASE = "upstream base"  # the label of the default red base (tag ``base``)
UNTESTED_NOTE = (
    "Non-test files the series changes that red keeps at the fix (not in "
    "fork.toml [fix].runtime_files): "
)


class ProofRun(Protocol):
    """What the verdict reads of a pytest run (a ``testing.forkruns.SuiteRun``)."""

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
class ProofChecks:
    """The checks beyond red and green a proof is asked for."""

    repeat: int = 0  # green again this many times (reversed, then random order)
    seed: int | None = None  # the random order's seed (None: a fresh one)
    hunks: bool = False  # revert each runtime hunk alone: which tests need it?
    strict_hunks: bool = False  # an untested hunk makes the proof invalid


@dataclass(frozen=True)
class RepeatCheck(Generic[R]):
    """Green run again in other orders: a test with mixed outcomes is FLAKY."""

    seed: int
    orders: tuple[str, ...]  # "reversed" or "random:SEED", one per repeat
    runs: tuple[R, ...]
    flaky: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return len(self.orders)


@dataclass(frozen=True)
class HunkCheck:
    """The FAIL_TO_PASS tests on the fix with one runtime hunk reverted."""

    hunk: str  # DiffHunk.describe()
    path: str
    symbol: str  # enclosing function(s) in the base file, ", "-joined
    reverted: bool  # False: the hunk cannot be reverted alone (see ``note``)
    turns_red: tuple[str, ...] = ()  # test ids that fail without it
    kinds: tuple[str, ...] = ()  # each one's failure kind, in the same order
    note: str = ""
    tree: str | None = None  # the tested tree
    cached: bool = False
    seconds: float = 0.0

    @property
    def untested(self) -> bool:
        """Reverted alone and still every FAIL_TO_PASS test passes."""
        return self.reverted and not self.turns_red and not self.note


def hunk_verdict(
    checks: Sequence[HunkCheck], *, strict: bool
) -> tuple[list[str], list[str]]:
    """(problems, notes) of the hunk matrix: an untested hunk is a note, or a
    problem when ``strict``; a hunk that cannot be reverted alone, or whose
    run gave no results, is a note."""
    untested = [c.hunk for c in checks if c.untested]
    problems: list[str] = []
    notes = [
        f"{c.hunk}: "
        + (c.note if c.reverted else f"cannot be reverted alone ({c.note})")
        for c in checks
        if c.note and not c.turns_red
    ]
    if untested:
        text = (
            f"{len(untested)} untested runtime hunk(s): every FAIL_TO_PASS test "
            f"passes without it: {'; '.join(untested)}"
        )
        (problems if strict else notes).append(text)
    return problems, notes


@dataclass(frozen=True)
class RedGreenResult(Generic[R]):
    """Everything a reviewer needs to check the proof and what it ran on."""

    title: str
    fork_path: Path
    upstream: str
    upstream_label: str
    upstream_commit: str | None
    base: str  # the commit red takes the runtime files from
    base_tree: str
    base_label: str  # UPSTREAM_BASE, or the patch/revision it is (base_label())
    upstream_base: str  # the tag ``base``: pristine upstream
    upstream_base_tree: str
    head: str
    head_tree: str
    patches: tuple[tuple[str, str], ...]
    files: tuple[FileBlob, ...]
    related_targets: tuple[tuple[str, str | None], ...]
    tests: tuple[str, ...]
    related_suites: tuple[str, ...]  # requested ones (empty: --no-related)
    pytest_args: tuple[str, ...]
    env_vars: dict[str, str]  # the variables forkkit set for the runs
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
    guards: tuple[GuardFinding, ...] = ()
    repeat: RepeatCheck[R] | None = None
    hunks: tuple[HunkCheck, ...] | None = None  # None: not asked (--hunks)
    mode: Mode = "red-green"
    red_recipe: RedRecipe = RUNTIME_FROM_BASE  # how red was made
    passed_env: tuple[str, ...] = ()  # the caller's variables the runs took
    testenv_key: str = ""  # the test env's build key (fork.toml [testenv], pin)
    packages: str = ""  # sha256 of its installed distributions (name==version)
    fix: Fix | None = None  # the fix this proof is of
    pin: PinDoc | None = None  # the upstream pin, typed (ProofSpec.pin)

    @property
    def valid(self) -> bool:
        return not self.problems

    def node(self, test_id: str) -> str:
        return self.node_ids.get(test_id, test_id)

    @property
    def base_patch(self) -> str | None:
        """The patch whose commit is red's base (None: upstream or another)."""
        return next((n for n, c in self.patches if c == self.base), None)

    @property
    def upstream_red(self) -> bool:
        """Red's runtime files are pristine upstream's (the default base)."""
        return self.base == self.upstream_base


def patch_commit(patches: Sequence[tuple[str, str]], which: str) -> tuple[str, str]:
    """The (name, commit) of the patch ``which`` names: its file name, a prefix
    of it naming one patch (``0002``), or its position in the series from 1.
    ValueError says why none."""
    exact = [p for p in patches if p[0] == which]
    prefixed = exact or [p for p in patches if p[0].startswith(which)]
    if len(prefixed) == 1:
        return prefixed[0]
    names = ", ".join(n for n, _ in (prefixed or patches)) or "(none)"
    if prefixed:
        raise ValueError(f"names {len(prefixed)} patches ({names}); give more of it")
    if which.isdigit() and 1 <= int(which) <= len(patches):
        return patches[int(which) - 1]
    raise ValueError(f"no such patch in the fork tree's series ({names})")


def without_fix(fix_id: str) -> str:
    """How a report names a fix's red: the fork with its runtime reverted."""
    return f"HEAD without fix '{fix_id}'"


def base_label(
    commit: str,
    *,
    rev: str,
    upstream_base: str,
    patches: Sequence[tuple[str, str]],
) -> str:
    """How the report names red's base: ``upstream base``, the patch whose
    commit it is (``0002-x.patch (commit abc123456789)``) or the revision."""
    if commit == upstream_base:
        return UPSTREAM_BASE
    short = commit[:12]
    name = next((n for n, c in patches if c == commit), None)
    if name is None and commit.startswith(rev):
        return f"commit {short}"
    return f"{name or rev} (commit {short})"


def untested_changes(changed: Sequence[str], runtime: Sequence[str]) -> list[str]:
    """Changed runtime code (not tests, docs, CI or requirements) that is not
    a listed runtime file."""
    return [f for f in changed if f not in runtime and is_runtime_path(f)]


def untested_notes(changed: Sequence[str], runtime: Sequence[str]) -> list[str]:
    """The report's note on :func:`untested_changes` (none when there are none)."""
    others = untested_changes(changed, runtime)
    return [UNTESTED_NOTE + ", ".join(others)] if others else []


def failing_ids(report: JunitReport) -> list[str]:
    """Failed and erroring tests, then collection errors."""
    ids = [t.test_id for t in report.tests.values() if t.outcome in ("failed", "error")]
    return ids + [t.test_id for t in report.collection_errors]


def related_verdict(
    fix: JunitReport, base: JunitReport | None, *, own: frozenset[str] = frozenset()
) -> RelatedVerdict:
    """Split the fix's related failures into regressions and pre-existing
    ones; the tests in ``own`` (the fix's own pair ran them) are not the
    related run's to judge."""
    failing = [t for t in failing_ids(fix) if t not in own]
    if base is None:
        return RelatedVerdict(regressions=tuple(failing))
    base_bad = set(failing_ids(base))
    pre = tuple(t for t in failing if t in base_bad)
    reg = tuple(t for t in failing if t not in base_bad)
    return RelatedVerdict(regressions=reg, preexisting=pre)


def classification_ids(c: Classification) -> list[str]:
    """Every classified test id, category by category."""
    return [t for ids in c.by_category.values() for t in ids]


def guard_classification(
    green: JunitReport,
    *,
    upstream: str,
    carried: Sequence[str] = (),
    recorded: Sequence[str] = (),
) -> Classification:
    """A tests-only series' verdict: every carried test passes on ``upstream``
    (each passing test is PASS_TO_PASS: red is green's tree). A carried test
    (one ``carried`` selects) that is skipped or xfailed does not pass, and
    each ``recorded`` one (node ids, patches/retired.toml) must have run."""
    groups = classify(green, green, reason=None).by_category
    problems = run_problems("guard", green)
    failing = groups.get("FAIL_TO_FAIL", [])  # failed (or errored) in the one run
    if failing:
        problems.append(
            f"{len(failing)} carried test(s) fail on {upstream} (upstream's fix "
            f"regressed, or the tests need a refresh), e.g. {failing[0]}"
        )
    files = {target_file(t) for t in carried}
    skipped = [  # skipped, xfailed, or an xfail-marked test that passed
        tid
        for tid, t in green.tests.items()
        if (t.outcome == "skipped" or t.mark)
        and any(covers(c, node_id(tid, files) or "") for c in carried)
    ]
    if skipped:
        problems.append(
            f"{len(skipped)} carried test(s) are skipped or xfailed on {upstream}, "
            f"so they prove nothing: a guard holds only when each passes, e.g. "
            f"{skipped[0]}"
        )
    problems += _missing_recorded(green, recorded)
    return Classification(by_category=groups, problems=tuple(problems))


def _missing_recorded(green: JunitReport, recorded: Sequence[str]) -> list[str]:
    """One problem naming the recorded tests that did not run at all."""
    files = {target_file(t) for t in recorded}
    ran = {node_id(tid, files) for tid in green.tests}
    missing = [t for t in recorded if t not in ran]
    if not missing:
        return []
    return [
        f"{len(missing)} carried test(s) recorded in patches/{RETIRED_FILE} did "
        f"not run (deleted or renamed), e.g. {missing[0]}: restore the test, or "
        "write its new name in the record's 'tests'"
    ]


def proof_problems(
    red: ProofRun,
    green: ProofRun,
    classification: Classification,
    *,
    files: Sequence[FileBlob],
    related: ProofRun | None,
    verdict: RelatedVerdict,
    guards: Sequence[GuardFinding] = (),
    others: Sequence[ProofRun] = (),
    base: str = UPSTREAM_BASE,
    mode: Mode = "red-green",
) -> list[str]:
    """Every reason the proof does not hold (empty: a valid proof); ``base``:
    the label of red's base; a guard changes no runtime file by design."""
    problems: list[str] = []
    runtime = [f for f in files if f.role == "runtime"]
    if mode == "red-green" and runtime and all(f.base == f.fix for f in runtime):
        what = (
            "the fork does not change any runtime file"
            if base == UPSTREAM_BASE
            else f"no runtime file changed since {base}"
        )
        problems.append(
            f"{what} ({', '.join(f.path for f in runtime)}): "
            "red and green test the same code"
        )
    for run in (red, green, related, *others):
        if run is not None and run.problem:
            problems.append(run.problem)
    problems += classification.problems
    problems += [g.message for g in guards if g.blocking]
    problems = list(dict.fromkeys(problems))  # green shares the fix run's problem
    if related is not None and verdict.regressions and mode == "guard":
        problems.append(
            f"related suites: {len(verdict.regressions)} test(s) fail with the "
            f"carried tests, e.g. {verdict.regressions[0]}"
        )
    elif related is not None and verdict.regressions:
        problems.append(
            f"related suites: {len(verdict.regressions)} test(s) fail on the fix "
            f"but not on base (PASS_TO_FAIL), e.g. {verdict.regressions[0]}"
        )
    return problems
