# SPDX-License-Identifier: Apache-2.0
"""Test runs on committed trees only, so a report names exactly what ran.

Every run happens in a fresh scratch checkout of its commit, beside the fork
tree: HEAD, or HEAD with the runtime files of another revision
(:func:`forkkit.vcs.overlay.overlay_commit`). Nothing that is not in the
commit can reach it: no untracked, ignored or flagged file, no bytecode, and
(see :class:`forkkit.testing.env.TestEnv`) no variable that was not chosen.
A fork tree with uncommitted changes is refused when its HEAD is to be
tested, never tested as if it were HEAD, nor silently left out.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forkkit.errors import ForkkitError, first_few
from forkkit.fork.tree import ForkTree
from forkkit.output.progress import say
from forkkit.output.runprogress import LIVE, short_summary
from forkkit.testing import service
from forkkit.testing.cache import ResultCache
from forkkit.testing.env import TestEnv
from forkkit.testing.junit import JunitReport, parse_junit_text
from forkkit.testing.pytest_run import PytestRun
from forkkit.testing.service import RunSpec
from forkkit.vcs import Repo
from forkkit.vcs.overlay import overlay_commit
from forkkit.workdir import published_path

_USAGE_ERR = re.compile(r"^ERROR\b|\berror: ")
SHOWN_FILES = 3  # uncommitted files named in a refusal


@dataclass(frozen=True)
class SuiteRun:
    """One pytest run and exactly which tree it ran on."""

    name: str  # file stem of its JUnit XML / log
    runtime_rev: str  # commit the runtime files came from
    tree: str  # git tree id of the tested tree (checked out fresh to run)
    run: PytestRun
    report: JunitReport | None  # None: pytest wrote no JUnit (timeout, crash)
    problem: str = ""
    shards: tuple[SuiteRun, ...] = ()  # the runs it was split into, side by side

    @property
    def cached(self) -> bool:
        """Its results came from the result cache (nothing ran now)."""
        return self.run.cached

    def counts(self) -> dict[str, int]:
        return self.report.summary() if self.report else {}


# The fork trees found clean in this command (see clean_once); None: outside
# such a command, every check looks again.
_CLEAN: ContextVar[set[str] | None] = ContextVar("forkkit_clean", default=None)


@contextmanager
def clean_once() -> Iterator[None]:
    """In the block, a fork tree found clean is not looked at again: one
    command's proofs all test commits checked out elsewhere, so the check is
    about what the user asked for, and once per command says it."""
    token = _CLEAN.set(set())
    try:
        yield
    finally:
        _CLEAN.reset(token)


def require_committed(repo: Repo, what: str) -> None:
    """Refuse (one line naming the files) unless the work tree is exactly HEAD."""
    clean = _CLEAN.get()
    if clean is not None and str(repo.path) in clean:
        return
    dirty = repo.dirty()
    if not dirty:
        if clean is not None:
            clean.add(str(repo.path))
        return
    shown = first_few(dirty, SHOWN_FILES)
    raise ForkkitError(
        f"{repo.path}: uncommitted changes in the fork tree ({len(dirty)} file(s): "
        f"{shown}); {what} tests committed trees only: commit them and run "
        "'forkkit export', or move them out of the fork tree"
    )


def _target(
    repo: Repo, *, head: str, source: str, runtime_files: Sequence[str]
) -> tuple[str, str]:
    """The commit to test and its tree: ``head``, or ``head`` with the
    runtime files of ``source`` (an overlay commit, the same for every run
    that asks for it: its message does not name the run)."""
    same = all(repo.blob(source, f) == repo.blob(head, f) for f in runtime_files)
    if same:
        return head, repo.tree(head)
    overlay = overlay_commit(
        repo,
        onto=head,
        source=source,
        paths=list(runtime_files),
        message=f"forkkit: runtime files from {source}\n",
    )
    return overlay.commit, overlay.tree


@dataclass(frozen=True)
class ForkRuns:
    """What the pytest runs of one command on a fork tree share: each runs
    the tests of commit ``head`` with ``runtime_files`` from some revision."""

    runtime_files: tuple[str, ...]
    env: TestEnv
    out_dir: Path  # the report folder: JUnit and log are written here
    head: str = "HEAD"
    pytest_args: tuple[str, ...] = ()
    timeout: float | None = None
    cache: ResultCache | None = None  # None: every run runs now, none is kept
    stream: bool = True

    def run(
        self,
        tree: ForkTree | Path,
        rev: str,
        tests: Sequence[str],
        *,
        name: str,
        cancel: threading.Event | None = None,
        place: str = "",
        reuse: bool = True,
    ) -> SuiteRun:
        """Run the tests of ``head`` with the runtime files of ``rev``, in a
        fresh scratch checkout of that tree: the fork tree is never edited,
        and nothing outside the commit runs. A finished run is kept in the
        cache; ``reuse`` False runs it now even when the cache has it.
        ``place`` names the checkout and every path pytest is given
        (default: ``name``), so runs of one place differ only in the tree."""
        # (a killed run's worktrees are pruned once per proof, not per run)
        repo, spec, target, source = self._spec(tree, rev, tests, name=name)
        spec = dataclasses.replace(spec, place=place)
        tested = spec.tree
        where = ForkWorkspace(repo, target, name=name, source=source, place=place)
        ran = service.run(
            spec,
            workspace=lambda: where,
            cache=self.cache,
            reuse=reuse,
            stream=self.stream,
            cancel=cancel,
        )
        report, problem = read_run(ran.run, name)
        if not problem and where.changed:
            problem = _changed_problem(name, where.changed)
        if report is not None and not problem:
            service.keep(spec, ran, cache=self.cache)
        if self.stream:
            _console_summary(name, ran.run, report)
        return SuiteRun(name, source, tested, ran.run, report, problem)

    def _spec(
        self, tree: ForkTree | Path, rev: str, tests: Sequence[str], *, name: str
    ) -> tuple[Repo, RunSpec, str, str]:
        """The repo, the run's spec, the commit that runs and the runtime's."""
        repo = Repo(tree.path if isinstance(tree, ForkTree) else tree)
        head_id, source = _resolve(repo, rev, self.head)
        target, tested = _target(
            repo,
            head=head_id,
            source=source,
            runtime_files=self.runtime_files,
        )
        spec = RunSpec(
            name,
            tested,
            tuple(tests),
            self.env,
            self.out_dir,
            self.pytest_args,
            self.timeout,
        )
        return repo, spec, target, source

    def has(
        self, tree: ForkTree | Path, rev: str, tests: Sequence[str], *, name: str
    ) -> bool:
        """Whether the cache holds this very run (:meth:`run` restores it)."""
        return self._lookup(tree, rev, tests, name=name, unfinished=False)

    def held(
        self, tree: ForkTree | Path, rev: str, tests: Sequence[str], *, name: str
    ) -> bool:
        """Whether :meth:`run` would not start pytest: the cache holds this
        run, or this command ran it already and it did not finish."""
        return self._lookup(tree, rev, tests, name=name, unfinished=True)

    def _lookup(
        self,
        tree: ForkTree | Path,
        rev: str,
        tests: Sequence[str],
        *,
        name: str,
        unfinished: bool,
    ) -> bool:
        """The one key computation of :meth:`has` and :meth:`held`."""
        if self.cache is None:
            return False
        key = self._spec(tree, rev, tests, name=name)[1].key()
        found = self.cache.get(key) is not None
        return found or (unfinished and self.cache.unfinished(key) is not None)

    def keep_whole(
        self,
        tree: ForkTree | Path,
        rev: str,
        tests: Sequence[str],
        *,
        run: SuiteRun,
    ) -> None:
        """Keep ``run`` (the merged shards of ``tests``) as the run of all of
        ``tests``: what it stands for, so an unchanged rerun is one lookup."""
        if run.report is None or run.problem:
            return
        spec = self._spec(tree, rev, tests, name=run.name)[1]
        service.keep(spec, service.Ran(run.run, spec.targets), cache=self.cache)


class ForkWorkspace(AbstractContextManager[Path]):
    """Where commit ``target`` of the fork repo runs: a fresh scratch
    checkout of it, removed afterwards. When ``target`` is the fork tree's
    HEAD, uncommitted changes there are refused (one line naming them): they
    would not run. What the tests wrote into their checkout is
    :attr:`changed` afterwards."""

    def __init__(
        self,
        repo: Repo,
        target: str,
        *,
        name: str,
        source: str,
        what: str = "red-green",
        place: str = "",
    ) -> None:
        self.repo, self.target, self.name, self.source = repo, target, name, source
        self.place = place or name  # the checkout's name
        self.what = what  # the command, as the refusal names it
        self.changed: list[str] = []
        self._scratch: AbstractContextManager[Repo] | None = None
        self._checkout: Repo | None = None

    def __enter__(self) -> Path:
        at_head = self.target == self.repo.rev("HEAD")
        if at_head:
            require_committed(self.repo, self.what)
        self._scratch = self.repo.worktree(self.target, self.place)
        self._checkout = self._scratch.__enter__()
        where = self._checkout.path
        if at_head:
            say(f"{self.name}: HEAD {self.target[:12]}, checked out in {where}")
        else:
            say(f"{self.name}: runtime files from {self.source[:12]} in {where}")
        return Path(where)

    def __exit__(self, *exc: Any) -> bool | None:
        assert self._scratch is not None and self._checkout is not None
        if exc[0] is None:
            self.changed = self._checkout.dirty()
        return self._scratch.__exit__(*exc)


def _resolve(repo: Repo, rev: str, head: str) -> tuple[str, str]:
    """The commit ids of ``head`` and ``rev`` (one line if one is missing)."""
    head_id, source = repo.rev(head), repo.rev(rev)
    if head_id is None or source is None:
        raise ForkkitError(
            f"{repo.path}: no revision {rev if head_id else head!r}; "
            "materialize the fork first (forkkit materialize)"
        )
    return head_id, source


def _console_summary(name: str, run: PytestRun, report: JunitReport | None) -> None:
    """One line per finished run, then pytest's short failure summary."""
    counts = report.counts_text() if report else "no results"
    secs = f"{run.seconds:.1f}s"
    how = f"cached (ran in {secs})" if run.cached else f"in {secs}"
    LIVE.note(f"[forkkit] {name}: {counts} {how}; log {published_path(run.log)}")
    if run.returncode != 0 and run.log.is_file():
        text = run.log.read_text(errors="replace")
        for line in short_summary(text):
            LIVE.note(f"    {line}")


def _changed_problem(name: str, changed: list[str]) -> str:
    return (
        f"{name}: the tests wrote into the tree they ran in "
        f"({', '.join(changed[:SHOWN_FILES])}); what ran after that is not the "
        "tree the report names: make the tests write elsewhere (tmp_path)"
    )


def read_run(run: PytestRun, name: str) -> tuple[JunitReport | None, str]:
    """The run's JUnit report, or why there is none (a problem, or an error);
    messages name its files where they are published."""
    log = published_path(run.log)
    if run.timed_out:
        at = f" while {run.running} ran" if run.running else ""
        return (
            None,
            f"{name}: pytest timed out after {run.seconds:.0f}s{at} (see {log})",
        )
    if run.returncode in (3, 4):
        lines = run.log.read_text().strip().splitlines() if run.log.exists() else []
        errors = [ln.strip() for ln in lines if _USAGE_ERR.search(ln)] or lines[-1:]
        raise ForkkitError(
            f"{log}: pytest refused the run (exit {run.returncode}"
            f"{': ' + errors[-1] if errors else ''}); fix --tests or the pytest options"
        )
    if not run.junit.is_file():
        return None, (
            f"{name}: no JUnit XML, pytest did not run to completion "
            f"(exit {run.returncode}, see {log})"
        )
    try:
        shown = str(published_path(run.junit))
        return parse_junit_text(run.junit.read_text(), shown), ""
    except ForkkitError as exc:
        return None, f"{name}: {exc} (exit {run.returncode}, see {log})"
