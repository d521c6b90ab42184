# SPDX-License-Identifier: Apache-2.0
"""One cell of the reconcile behaviour matrix: one side's tests on one runtime.

A cell's tree is assembled in a scratch worktree (:class:`Workspace`) from a
root commit and layers of diffs, 3-way; its tests then run with pytest
(:func:`forkkit.testing.pytest_run.run_pytest`, its timeout policy), or a
finished run of the same tree comes back from the one result cache
(:mod:`forkkit.testing.cache`), or from a cell of this reconcile.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.output.progress import say, step
from forkkit.patches.testids import junit_module, target_file
from forkkit.services.reconcile.model import Cell, Layer, Plan, collection_kind
from forkkit.services.reconcile.overlap import Overlap
from forkkit.testing import service
from forkkit.testing.cache import ResultCache
from forkkit.testing.env import TestEnv
from forkkit.testing.junit import JunitReport, load_errors, parse_junit
from forkkit.testing.pytest_run import PytestRun
from forkkit.testing.service import RunSpec
from forkkit.vcs import ApplyResult, Repo, combine

# one module that cannot import must not stop the others
COLLECT_ALL = "--continue-on-collection-errors"


class Workspace:
    """A scratch worktree of the reconcile repo where cells are assembled."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.path = repo.path

    def reset(self, commit: str) -> None:
        self.repo.reset_hard()
        self.repo.detach(commit)

    def apply(self, text: str, patch_file: Path) -> ApplyResult:
        """Apply a diff, 3-way; on a conflict :meth:`unmerged` names the files."""
        patch_file.parent.mkdir(parents=True, exist_ok=True)
        patch_file.write_text(text)
        return combine.apply_3way(self.repo, patch_file)

    def restore(self, root: str, path: str) -> None:
        """Put ``path`` back as it is in ``root`` (absent if it is not there)."""
        if self.repo.object_id(f"{root}:{path}"):
            combine.restore_paths(self.repo, root, [path])
        else:
            combine.unstage_paths(self.repo, [path])
            (self.path / path).unlink(missing_ok=True)

    def tree_id(self) -> str:
        """The git tree of the worktree as it is now (staged for the purpose)."""
        return combine.worktree_tree(self.repo)

    def unmerged(self) -> list[str]:
        return sorted(set(self.repo.unmerged()))


_IMPORT_REASON = re.compile(
    r"^((?:ImportError|ModuleNotFoundError): (?:cannot import name '[\w.]+' "
    r"from '[\w.]+'|No module named '[\w.]+'))"
)


def _reason(line: str) -> str:
    """A collection error, reduced to names: the import that failed, or just
    the exception type (never code, which may be the competitor's)."""
    m = _IMPORT_REASON.match(line)
    return m.group(1) if m else line.split(":", 1)[0].strip()


def broken_modules(junit: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """Modules pytest could not collect (-> ``import``/``collection``), and the
    distinct one-line reasons (the ``E ...`` line of each traceback)."""
    kinds: dict[str, str] = {}
    reasons: list[str] = []
    for err in load_errors(junit):
        kinds[err.module] = collection_kind(err.text)
        last = [ln for ln in err.text.splitlines() if ln.startswith("E ")]
        if last:
            reasons.append(_reason(last[-1][1:].strip()))
    return kinds, tuple(dict.fromkeys(reasons))


def _apply_error(result: ApplyResult) -> str:
    """What git said about a diff that did not even merge 3-way."""
    if result.kind == "hunk":
        return f"{result.path} line {result.line} does not apply"
    if result.kind == "missing":
        return f"{result.path} does not exist"
    if result.kind == "exists":
        return f"{result.path} already exists"
    return result.message.removeprefix("error: ") or "git apply failed"


def _conflict_lines(
    layer: Layer, files: list[str], *, result: ApplyResult, overlap: Overlap
) -> tuple[str, ...]:
    """Name the files and hunks of a layer that did not apply."""
    lines: list[str] = []
    pairs = overlap.pairs
    for f in filter(None, files):
        other = "their" if layer.side == "ours" else "our"
        mine = [
            f"{layer.name} {a.describe()} vs {other} {b.describe()}"
            for path, p in pairs
            if path == f
            for a, b in [
                (p.ours, p.theirs) if layer.side == "ours" else (p.theirs, p.ours)
            ]
        ]
        if mine:
            lines.append(f"{f}: " + "; ".join(mine))
        else:
            hunks = layer.diff.hunks(f) if layer.diff else ()
            ids = ", ".join(f"{h.index}/{h.count}" for h in hunks) or "?"
            lines.append(f"{f}: {layer.name} hunk(s) {ids} (3-way merge conflict)")
    return tuple(lines) or (f"{layer.name}: {_apply_error(result)}",)


@dataclass(frozen=True)
class Bench:
    """What every cell of one reconcile shares: the scratch worktree, the test
    env, the pytest arguments, the result cache and the cells done so far."""

    ws: Workspace
    env: TestEnv
    out: Path  # the report folder: layers/, junit/
    overlap: Overlap
    cache: ResultCache  # ``fresh``: stored, never read
    pytest_args: tuple[str, ...] = ()
    timeout: float | None = None
    # result-cache digest -> the cell of this reconcile that ran that tree
    done: dict[str, Cell] = field(default_factory=dict)

    @property
    def extra(self) -> list[str]:
        """What every pytest command of reconcile gets besides the targets."""
        return [COLLECT_ALL, *self.pytest_args]


def assemble(
    bench: Bench, plan: Plan, *, name: str = ""
) -> tuple[tuple[str, ...], tuple[str, ...]] | Cell:
    """Apply a plan's layers; (conflict lines, skipped test files) or a
    conflict cell when a runtime layer does not apply. ``name`` prefixes its
    layer files and messages (default ``SIDE-on-RUNTIME``)."""
    ws, name = bench.ws, name or f"{plan.side}-on-{plan.runtime.key}"
    ws.reset(plan.root)
    conflicts: list[str] = []
    skipped: list[str] = []
    for i, layer in enumerate(plan.layers):
        chunks = list(layer.parts) if layer.per_file else [("", layer.text)]
        for j, (path, text) in enumerate(chunks):
            if not text.strip():
                continue
            result = ws.apply(text, bench.out / "layers" / f"{name}-{i}-{j}.diff")
            if result.ok:
                continue
            files = ws.unmerged() or [path]
            shown = ", ".join(filter(None, files)) or result.path or "?"
            say(f"{name}: {layer.name}: {shown} conflict(s)")
            lines = _conflict_lines(layer, files, result=result, overlap=bench.overlap)
            if not layer.per_file:
                return Cell(plan.side, plan.runtime.key, "conflict", conflict=lines)
            ws.restore(plan.root, path)
            conflicts += lines
            skipped.append(path)
    return tuple(conflicts), tuple(skipped)


def run_cell(bench: Bench, plan: Plan) -> Cell:
    """Assemble a cell's tree and run its tests (or reuse an identical run).

    A runtime layer that does not apply makes the cell a conflict; a test file
    that does not apply is skipped and its tests count as conflicts.
    """
    assembled = assemble(bench, plan)
    if isinstance(assembled, Cell):
        return assembled
    conflicts, skipped = assembled
    runnable = [t for t in plan.targets if target_file(t) not in skipped]
    present = tuple(t for t in runnable if (bench.ws.path / target_file(t)).is_file())
    absent = [t for t in runnable if t not in present]
    notes = [f"not in this tree: {', '.join(absent)}"] if absent else []
    base = Cell(
        plan.side,
        plan.runtime.key,
        "ran",
        conflict=conflicts,
        skipped_files=skipped,
        note="; ".join(notes),
    )
    if not present:
        return replace(base, status="conflict" if skipped else "not-applicable")
    origin = f"{plan.side}@{plan.runtime.key}"
    spec = RunSpec(
        name=origin.replace("@", "-on-"),
        tree=bench.ws.tree_id(),
        targets=present,
        env=bench.env,
        out_dir=bench.out / "junit",
        pytest_args=tuple(bench.extra),
        timeout=bench.timeout,
    )
    digest = spec.key().digest()
    prev = bench.done.get(digest)
    if prev is not None:
        say(f"{origin}: same tree as {prev.side}@{prev.runtime}, not run again")
        return replace(
            prev,
            side=plan.side,
            runtime=plan.runtime.key,
            conflict=conflicts,
            skipped_files=skipped,
            reused=f"{prev.side}@{prev.runtime}",
        )
    result = _run(bench, spec, origin=origin)
    cell = _cell_from(base, result, notes)
    bench.done[digest] = cell
    return cell


@dataclass(frozen=True)
class _Result:
    """What a cell's pytest run left: a fresh run, or a cached result."""

    run: PytestRun
    broken: dict[str, str]
    reasons: tuple[str, ...]
    notes: tuple[str, ...]


class _DropUnimportable:
    """The rerun policy of a cell: pytest aborts the whole session when a node
    id names a test in a module that does not import (even with
    --continue-on-collection-errors), so those node ids are dropped and the
    rest runs again; one broken module never hides the others. What each
    attempt could not collect is kept here."""

    def __init__(self) -> None:
        self.broken: dict[str, str] = {}
        self.reasons: tuple[str, ...] = ()

    def seen(self, run: PytestRun) -> None:
        broken, reasons = broken_modules(run.junit)
        self.broken.update(broken)
        self.reasons = tuple(dict.fromkeys([*self.reasons, *reasons]))

    def __call__(
        self, run: PytestRun, targets: tuple[str, ...]
    ) -> tuple[tuple[str, ...], str] | None:
        self.seen(run)
        dropped = [
            t
            for t in targets
            if "::" in t and junit_module(target_file(t)) in self.broken
        ]
        rest = tuple(t for t in targets if t not in dropped)
        if not dropped or not rest:
            return None
        return rest, f"reran without {len(dropped)} node id(s) of unimportable modules"


def _run(bench: Bench, spec: RunSpec, *, origin: str) -> _Result:
    """The cell's run (:func:`forkkit.testing.service.run`): the cached run of
    this exact tree, or pytest in the assembled worktree, kept when finished
    with what it could not collect."""
    policy = _DropUnimportable()
    with step(f"{origin}: {len(spec.targets)} target(s)"):
        ran = service.run(
            spec,
            workspace=lambda: nullcontext(bench.ws.path),
            cache=bench.cache,
            stream=False,
            rerun=policy,
        )
    policy.seen(ran.run)
    if ran.cached:
        policy.broken.update(ran.extra.get("broken", {}))
        reasons = [*ran.extra.get("reasons", []), *policy.reasons]
        stored = tuple(ran.extra.get("notes", []))
        return _Result(ran.run, policy.broken, tuple(dict.fromkeys(reasons)), stored)
    notes = list(ran.notes)
    log = ran.run.log.relative_to(bench.out)  # as the report names it
    if ran.run.timed_out:
        notes.append(f"pytest killed after {spec.timeout:g}s; see {log}")
    if not ran.run.junit.is_file():
        notes.append(
            f"pytest wrote no JUnit XML (exit {ran.run.returncode}); see {log}"
        )
    extra = {"broken": policy.broken, "reasons": policy.reasons, "notes": notes}
    service.keep(spec, ran, cache=bench.cache, extra=extra)
    return _Result(ran.run, policy.broken, policy.reasons, tuple(notes))


def _cell_from(base: Cell, result: _Result, notes: list[str]) -> Cell:
    """A ran cell from its JUnit file (missing or unreadable: an empty report,
    and the cell is not ``finished``)."""
    run = result.run
    finished = run.junit.is_file() and not run.timed_out
    try:
        report = parse_junit(run.junit) if finished else JunitReport()
    except ForkkitError:
        report, finished = JunitReport(), False
    notes = [*notes, *result.notes]
    if result.reasons:
        notes.append(
            f"{len(result.broken)} module(s) not collected: "
            + "; ".join(result.reasons)
        )
    return replace(
        base,
        report=report,
        broken_modules=result.broken,
        command=run.command,
        seconds=run.seconds,
        note="; ".join(notes),
        cached=run.cached,
        finished=finished,
    )
