# SPDX-License-Identifier: Apache-2.0
"""``red_green.json`` as types: what the proof writes and what ``verify``,
``pr-body`` and the rebase report read (pure: no I/O).

Built from a :class:`~forkkit.services.proof.model.RedGreenResult` by
:func:`proof_doc`, written with :func:`forkkit.output.doc.to_json` and read
back with :func:`read_proof`; the document is ``forkkit.red-green``
version 2 (:data:`forkkit.output.report.PROOF`; a version 1 report is
upgraded on read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from forkkit.output.report import PROOF, Report
from forkkit.pin import PinDoc
from forkkit.services.proof.model import HunkCheck, Mode, RedGreenResult
from forkkit.services.proof.recipe import RUNTIME_FROM_BASE, RedRecipe
from forkkit.testing.causes import failure_causes
from forkkit.testing.classify import CATEGORIES
from forkkit.testing.forkruns import SuiteRun

Result = RedGreenResult[SuiteRun]
_V1_WITHOUT_FIX = "HEAD without fix '{}'"  # how version 1 named a fix's red


@dataclass(frozen=True)
class Upstream:
    ident: str  # the pin: sdist name, version and sha256 (or git URL@rev)
    label: str = ""
    commit: str | None = None
    pin: PinDoc | None = None  # the same pin, typed (read it, not ident)


@dataclass(frozen=True)
class TreeRef:
    commit: str | None = None
    tree: str | None = None


@dataclass(frozen=True)
class PatchRef:
    name: str
    commit: str


@dataclass(frozen=True)
class FileRef:
    path: str
    role: str  # "runtime" or "test"
    base_blob: str | None = None
    fix_blob: str | None = None


@dataclass(frozen=True)
class TestEnvDoc:
    """Which test environment ran: its build key and its installed packages."""

    key: str = ""
    packages: str = ""  # sha256 of the sorted name==version list


@dataclass(frozen=True)
class RunDoc:
    """One pytest run (a :class:`~forkkit.testing.forkruns.SuiteRun`)."""

    command: str = ""
    counts: dict[str, int] = field(default_factory=dict)
    name: str = ""
    runtime_rev: str | None = None
    tree: str | None = None
    targets: tuple[str, ...] = ()
    returncode: int | None = None
    timed_out: bool = False
    cached: bool = False
    wall_seconds: float = 0.0
    pytest_seconds: float | None = None
    junit: str = ""
    log: str = ""
    problem: str = ""
    started_at: float = 0.0  # epoch seconds (0: it did not run now)
    shards: tuple[RunDoc, ...] = ()  # the runs it was split into, side by side


@dataclass(frozen=True)
class GuardDoc:
    guard: str
    message: str
    tests: tuple[str, ...] = ()
    blocking: bool = True


@dataclass(frozen=True)
class RepeatDoc:
    n: int
    seed: int
    orders: tuple[str, ...] = ()
    flaky: tuple[str, ...] = ()
    runs: tuple[RunDoc, ...] = ()


@dataclass(frozen=True)
class HunkDoc:
    hunk: str
    path: str = ""
    symbol: str = ""
    reverted: bool = False
    turns_red: tuple[str, ...] = ()
    red_kinds: dict[str, str] = field(default_factory=dict)
    untested: bool = False
    note: str = ""
    tree: str | None = None
    cached: bool = False
    wall_seconds: float = 0.0


@dataclass(frozen=True)
class CauseDoc:
    """Related-suite failures on the fix that fail on base too, by cause."""

    cause: str
    count: int
    environment: bool  # a fact of the test environment: deselect them there
    tests: tuple[str, ...] = ()


@dataclass(frozen=True)
class FixDoc:
    """The fix a proof is of: its id, provenance and what its patches change."""

    id: str
    title: str = ""
    forwarded: str = ""
    origin: str = ""
    patches: tuple[str, ...] = ()
    runtime_files: tuple[str, ...] = ()
    test_files: tuple[str, ...] = ()
    patch_sha256: tuple[str, ...] = ()  # of each patch file's text, in order


@dataclass(frozen=True)
class ProofDoc(Report):
    """The red/green report's JSON document."""

    DOC = PROOF

    upstream: Upstream
    classification: dict[str, tuple[str, ...]]
    valid: bool = False
    mode: Mode = "red-green"
    # how red's tree was made: the one field every reader asks (verify,
    # pr-body, the render); base_label is how a report names red, for people
    red_recipe: RedRecipe = RUNTIME_FROM_BASE
    problems: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    title: str = ""
    fork_path: str = ""
    base: TreeRef = TreeRef()
    base_label: str = ""
    upstream_base: TreeRef = TreeRef()
    fork_head: TreeRef = TreeRef()
    patches: tuple[PatchRef, ...] = ()
    files: tuple[FileRef, ...] = ()
    related_targets: dict[str, str | None] = field(default_factory=dict)
    tests: tuple[str, ...] = ()
    related_suites: tuple[str, ...] = ()
    pytest_args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)  # set by forkkit
    passed_env: tuple[str, ...] = ()  # names taken from the caller
    deselected: tuple[str, ...] = ()
    python: str = ""
    testenv: TestEnvDoc = TestEnvDoc()
    parallel: bool = False
    wall_seconds: float = 0.0
    red: RunDoc = RunDoc()
    green: RunDoc = RunDoc()
    related: RunDoc | None = None
    related_base: RunDoc | None = None
    related_regressions: tuple[str, ...] = ()
    related_preexisting_failures: tuple[str, ...] = ()
    guards: tuple[GuardDoc, ...] | None = None  # None: a report without guards
    repeat: RepeatDoc | None = None
    hunks: tuple[HunkDoc, ...] | None = None
    fix: FixDoc | None = None
    related_causes: tuple[CauseDoc, ...] = ()

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """A version 1 report (no ``red_recipe``) as version 2: its recipe
        is what version 1 wrote as its mode and red's label, read here once."""
        if data.get("version") != 1:
            return data
        fix = data["fix"] if isinstance(data.get("fix"), dict) else {}
        fid = str(fix.get("id", ""))
        label = str(data.get("base_label", ""))
        base = data["base"] if isinstance(data.get("base"), dict) else {}
        if data.get("mode") == "guard":
            recipe: dict[str, str] = {"kind": "guard"}
        elif fid and label == _V1_WITHOUT_FIX.format(fid):
            recipe = {"kind": "revert-hunks", "fix": fid}
        else:
            recipe = {"kind": "runtime-from", "rev": str(base.get("commit") or "")}
        return {**data, "version": 2, "red_recipe": recipe}

    def files_of(self, role: str) -> list[FileRef]:
        return [f for f in self.files if f.role == role]

    def ids(self, category: str) -> tuple[str, ...]:
        return self.classification.get(category, ())


def _run(run: SuiteRun | None) -> RunDoc | None:
    """The run as the report has it: its files named relative to the report
    folder, which the runs write into."""
    if run is None:
        return None
    pytest = run.run
    return RunDoc(
        command=pytest.command,
        counts=run.counts(),
        name=run.name,
        runtime_rev=run.runtime_rev,
        tree=run.tree,
        targets=pytest.args,
        returncode=pytest.returncode,
        timed_out=pytest.timed_out,
        cached=pytest.cached,
        wall_seconds=round(pytest.seconds, 3),
        pytest_seconds=round(run.report.seconds, 3) if run.report else None,
        junit=pytest.junit.name,
        log=pytest.log.name,
        problem=run.problem,
        started_at=round(pytest.started, 3),
        shards=tuple(d for s in run.shards if (d := _run(s)) is not None),
    )


def _hunk(r: Result, c: HunkCheck) -> HunkDoc:
    turns = tuple(r.node(t) for t in c.turns_red)
    return HunkDoc(
        hunk=c.hunk,
        path=c.path,
        symbol=c.symbol,
        reverted=c.reverted,
        turns_red=turns,
        red_kinds=dict(zip(turns, c.kinds, strict=True)),
        untested=c.untested,
        note=c.note,
        tree=c.tree,
        cached=c.cached,
        wall_seconds=round(c.seconds, 3),
    )


def _checks(r: Result) -> dict[str, Any]:
    """``guards``, ``repeat`` and ``hunks`` (None when not asked)."""
    rep = r.repeat
    guards = tuple(
        GuardDoc(g.guard, g.message, tuple(r.node(t) for t in g.tests), g.blocking)
        for g in r.guards
    )
    repeat = None
    if rep is not None:
        runs = tuple(d for d in map(_run, rep.runs) if d is not None)
        flaky = tuple(r.node(t) for t in rep.flaky)
        repeat = RepeatDoc(rep.n, rep.seed, tuple(rep.orders), flaky, runs)
    hunks = None if r.hunks is None else tuple(_hunk(r, c) for c in r.hunks)
    return {"guards": guards, "repeat": repeat, "hunks": hunks}


def proof_doc(r: Result) -> ProofDoc:
    """The document of a proof's result."""
    verdict = r.related_verdict
    return ProofDoc(
        valid=r.valid,
        mode=r.mode,
        problems=tuple(r.problems),
        notes=tuple(r.notes),
        title=r.title,
        fork_path=str(r.fork_path),
        upstream=Upstream(r.upstream, r.upstream_label, r.upstream_commit, r.pin),
        base=TreeRef(r.base, r.base_tree),
        base_label=r.base_label,
        red_recipe=r.red_recipe,
        upstream_base=TreeRef(r.upstream_base, r.upstream_base_tree),
        fork_head=TreeRef(r.head, r.head_tree),
        patches=tuple(PatchRef(n, c) for n, c in r.patches),
        files=tuple(FileRef(f.path, f.role, f.base, f.fix) for f in r.files),
        related_targets=dict(r.related_targets),
        tests=tuple(r.tests),
        related_suites=tuple(r.related_suites),
        pytest_args=tuple(r.pytest_args),
        env=dict(r.env_vars),
        passed_env=tuple(r.passed_env),
        deselected=tuple(r.deselected),
        python=r.python,
        testenv=TestEnvDoc(r.testenv_key, r.packages),
        parallel=r.parallel,
        wall_seconds=round(r.seconds, 3),
        red=_run(r.red) or RunDoc(),
        green=_run(r.green) or RunDoc(),
        classification={
            cat: tuple(r.node(t) for t in r.classification.ids(cat))
            for cat in CATEGORIES
        },
        related=_run(r.related),
        related_base=_run(r.related_base),
        related_regressions=tuple(r.node(t) for t in verdict.regressions),
        related_preexisting_failures=tuple(r.node(t) for t in verdict.preexisting),
        **_checks(r),
        fix=_fix(r),
        related_causes=_causes(r),
    )


def _causes(r: Result) -> tuple[CauseDoc, ...]:
    """The pre-existing related failures, grouped by cause."""
    report = r.related.report if r.related else None
    if report is None:
        return ()
    return tuple(
        CauseDoc(c.label, c.count, c.environment, tuple(r.node(t) for t in c.tests))
        for c in failure_causes(report, r.related_verdict.preexisting)
    )


def _fix(r: Result) -> FixDoc | None:
    f = r.fix
    if f is None:
        return None
    return FixDoc(
        id=f.id,
        title=f.title,
        forwarded=f.forwarded,
        origin=f.origin,
        patches=f.patches,
        runtime_files=f.runtime_files,
        test_files=f.test_files,
        patch_sha256=f.patch_sha256,
    )
