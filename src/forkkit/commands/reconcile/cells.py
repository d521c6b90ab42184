# SPDX-License-Identifier: Apache-2.0
"""One cell of the reconcile behaviour matrix: one side's tests on one runtime.

A cell's tree is assembled in a scratch worktree (:class:`Workspace`) from a
root commit and layers of diffs, 3-way; its tests then run with pytest, or an
identical earlier run is reused (:class:`RunCache`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from forkkit.commands.reconcile.diffs import (
    Cell,
    Overlap,
    Runtime,
    Side,
    collection_kind,
)
from forkkit.errors import ForkkitError
from forkkit.output.progress import say, step
from forkkit.patches.diff import Diff
from forkkit.patches.testids import junit_module, target_file
from forkkit.testing.cache import ResultCache, ResultKey
from forkkit.testing.env import TestEnv
from forkkit.testing.junit import JunitReport, load_errors, parse_junit
from forkkit.testing.pytest_run import PytestRun, run_pytest
from forkkit.vcs import ApplyResult, Repo, combine


@dataclass(frozen=True)
class Layer:
    """A diff applied on top of a tree (one side's runtime or tests part).

    A runtime layer applies whole or not at all; a test layer applies file by
    file, so one conflicting test file does not hide the others.
    """

    name: str
    side: Side
    parts: tuple[tuple[str, str], ...]  # (path, its diff), in path order
    diff: Diff | None
    per_file: bool = False

    @property
    def text(self) -> str:
        return "".join(t for _, t in self.parts)


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
class Plan:
    """Everything needed to run one cell."""

    side: Side
    runtime: Runtime
    root: str
    layers: tuple[Layer, ...]
    targets: tuple[str, ...]


class RunCache:
    """Finished pytest runs by content: tree, targets, pytest args, interpreter.

    Trees are content-addressed, so an identical tree (a side with no runtime
    change, or a rerun of reconcile) is not run twice. Runs of earlier
    commands come from the result cache at ``root`` (:mod:`forkkit.testing.cache`);
    ``root`` None: this run only; ``fresh``: stored, never read.
    """

    def __init__(
        self, root: Path | None, env: TestEnv, extra: list[str], *, fresh: bool = False
    ) -> None:
        self.results = ResultCache(root, fresh=fresh) if root is not None else None
        self.env = env
        # one module that cannot import must not stop the others
        self.extra = ["--continue-on-collection-errors", *extra]
        self.session: dict[str, Cell] = {}
        self._keys: dict[str, ResultKey] = {}

    def key(self, tree: str, targets: tuple[str, ...]) -> str:
        """Digest of the tree, the pytest arguments and the environment."""
        key = ResultKey.of(self.env, tree, targets, self.extra)
        digest = key.digest()
        self._keys[digest] = key
        return digest

    def stored(self, key: str) -> tuple[Path, dict[str, Any]] | None:
        """A run of an earlier command: its JUnit file and metadata."""
        hit = self.results.lookup(key) if self.results is not None else None
        if hit is None:
            return None
        return hit.junit, {**hit.extra, "command": hit.command, "seconds": hit.seconds}

    def store(self, key: str, run: PytestRun, extra: dict[str, Any]) -> None:
        """Keep a finished run (not one that timed out or wrote no JUnit)."""
        if self.results is None or run.timed_out or not run.junit.is_file():
            return
        self.results.put(self._keys[key], run, extra)


def _assemble(
    ws: Workspace, plan: Plan, *, out: Path, overlap: Overlap
) -> tuple[tuple[str, ...], tuple[str, ...]] | Cell:
    """Apply a plan's layers; (conflict lines, skipped test files) or a
    conflict cell when a runtime layer does not apply."""
    name = f"{plan.side}-on-{plan.runtime.key}"
    ws.reset(plan.root)
    conflicts: list[str] = []
    skipped: list[str] = []
    for i, layer in enumerate(plan.layers):
        chunks = list(layer.parts) if layer.per_file else [("", layer.text)]
        for j, (path, text) in enumerate(chunks):
            if not text.strip():
                continue
            result = ws.apply(text, out / "layers" / f"{name}-{i}-{j}.diff")
            if result.ok:
                continue
            files = ws.unmerged() or [path]
            shown = ", ".join(filter(None, files)) or result.path or "?"
            say(f"{name}: {layer.name}: {shown} conflict(s)")
            lines = _conflict_lines(layer, files, result=result, overlap=overlap)
            if not layer.per_file:
                return Cell(plan.side, plan.runtime.key, "conflict", conflict=lines)
            ws.restore(plan.root, path)
            conflicts += lines
            skipped.append(path)
    return tuple(conflicts), tuple(skipped)


def run_cell(
    ws: Workspace,
    plan: Plan,
    *,
    env: TestEnv,
    out: Path,
    overlap: Overlap,
    cache: RunCache,
    timeout: float | None = None,
) -> Cell:
    """Assemble a cell's tree and run its tests (or reuse an identical run).

    A runtime layer that does not apply makes the cell a conflict; a test file
    that does not apply is skipped and its tests count as conflicts.
    """
    assembled = _assemble(ws, plan, out=out, overlap=overlap)
    if isinstance(assembled, Cell):
        return assembled
    conflicts, skipped = assembled
    runnable = [t for t in plan.targets if target_file(t) not in skipped]
    present = tuple(t for t in runnable if (ws.path / target_file(t)).is_file())
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
    key = cache.key(ws.tree_id(), present)
    origin = f"{plan.side}@{plan.runtime.key}"
    if key in cache.session:
        prev = cache.session[key]
        say(f"{origin}: same tree as {prev.side}@{prev.runtime}, not run again")
        return replace(
            prev,
            side=plan.side,
            runtime=plan.runtime.key,
            conflict=conflicts,
            skipped_files=skipped,
            reused=f"{prev.side}@{prev.runtime}",
        )
    ran = _stored_run(cache, key, origin) or _run_targets(
        env,
        ws.path,
        key=key,
        targets=present,
        out=out / "junit",
        origin=origin,
        cache=cache,
        timeout=timeout,
    )
    cell = _cell_from(base, ran, notes)
    cache.session[key] = cell
    return cell


@dataclass(frozen=True)
class _Ran:
    """What one cell's pytest run left: fresh, or stored by an earlier reconcile."""

    junit: Path
    command: str
    seconds: float
    broken: dict[str, str]
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    timed_out: bool = False
    cached: bool = False


def _stored_run(cache: RunCache, key: str, origin: str) -> _Ran | None:
    stored = cache.stored(key)
    if stored is None:
        return None
    say(f"{origin}: this exact tree ran in an earlier reconcile; reusing it")
    junit, meta = stored
    broken, reasons = broken_modules(junit)
    broken.update(meta.get("broken", {}))
    reasons = tuple(dict.fromkeys([*meta.get("reasons", []), *reasons]))
    notes = tuple(meta.get("notes", []))
    return _Ran(
        junit, meta["command"], meta["seconds"], broken, reasons, notes, False, True
    )


def _run_targets(
    env: TestEnv,
    tree: Path,
    *,
    key: str,
    targets: tuple[str, ...],
    out: Path,
    origin: str,
    cache: RunCache,
    timeout: float | None,
) -> _Ran:
    """Run pytest, and keep the run in ``cache`` under ``key``.

    pytest aborts the whole session when a node id names a test in a module
    that does not import (even with --continue-on-collection-errors): those
    node ids are dropped and the rest runs again, so one broken module never
    hides the others.
    """
    name = origin.replace("@", "-on-")
    with step(f"{origin}: {len(targets)} target(s)"):
        run = run_pytest(
            env, tree, list(targets), out, name, cache.extra, False, timeout
        )
    broken, reasons = broken_modules(run.junit)
    notes: list[str] = []
    dropped = [
        t for t in targets if "::" in t and junit_module(target_file(t)) in broken
    ]
    rest = tuple(t for t in targets if t not in dropped)
    if dropped and rest and not run.timed_out:
        notes.append(f"reran without {len(dropped)} node id(s) of unimportable modules")
        with step(f"{origin}: {len(rest)} target(s), again"):
            run = run_pytest(
                env, tree, list(rest), out, name, cache.extra, False, timeout
            )
        more, why = broken_modules(run.junit)
        broken.update(more)
        reasons = tuple(dict.fromkeys([*reasons, *why]))
    if run.timed_out:
        notes.append(f"pytest killed after {timeout:g}s; see {run.log}")
    if not run.junit.is_file():
        notes.append(
            f"pytest wrote no JUnit XML (exit {run.returncode}); see {run.log}"
        )
    cache.store(key, run, {"broken": broken, "reasons": reasons, "notes": notes})
    return _Ran(
        run.junit,
        run.command,
        run.seconds,
        broken,
        reasons,
        tuple(notes),
        timed_out=run.timed_out,
    )


def _cell_from(base: Cell, ran: _Ran, notes: list[str]) -> Cell:
    """A ran cell from its JUnit file (missing or unreadable: an empty report,
    and the cell is not ``finished``)."""
    finished = ran.junit.is_file() and not ran.timed_out
    try:
        report = parse_junit(ran.junit) if finished else JunitReport()
    except ForkkitError:
        report, finished = JunitReport(), False
    notes = [*notes, *ran.notes]
    if ran.reasons:
        notes.append(
            f"{len(ran.broken)} module(s) not collected: " + "; ".join(ran.reasons)
        )
    return replace(
        base,
        report=report,
        broken_modules=ran.broken,
        command=ran.command,
        seconds=ran.seconds,
        note="; ".join(notes),
        cached=ran.cached,
        finished=finished,
    )
