# SPDX-License-Identifier: Apache-2.0
"""The one way forkkit runs a test tree: a :class:`RunSpec`, a workspace
where that tree is checked out, and :func:`run`, with the result cache
wrapped around it and a rerun policy.

The spec names everything that reaches pytest (the git tree, the targets,
the test env, the arguments, the timeout), so its :class:`ResultKey` says
when an earlier run can stand in for this one. A workspace is a context
manager that yields the folder holding the spec's tree: the fork tree in
place (:func:`forkkit.testing.forkruns.fork_workspace`), a scratch worktree
of a commit, or a tree assembled by the caller (reconcile's cells).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from forkkit.output.progress import say
from forkkit.testing.cache import ResultCache, ResultKey
from forkkit.testing.env import TestEnv
from forkkit.testing.pytest_run import PytestRun, run_pytest

# After a run: the targets to run again (none: keep this run) and a note.
Rerun = Callable[[PytestRun, tuple[str, ...]], tuple[tuple[str, ...], str] | None]


@dataclass(frozen=True)
class RunSpec:
    """One pytest run, named completely: what runs and where its files go."""

    name: str  # the stem of its JUnit XML and log
    tree: str  # the git tree id that runs (the result-cache key's tree)
    targets: tuple[str, ...]
    env: TestEnv
    out_dir: Path
    pytest_args: tuple[str, ...] = ()
    timeout: float | None = None
    # names every path the process sees (checkout, JUnit, progress; default:
    # ``name``): runs of one place differ only in their tree
    place: str = ""

    def key(self) -> ResultKey:
        """What a cached run must match to stand in for this one."""
        return ResultKey.of(
            self.env, self.tree, self.targets, pytest_args=self.pytest_args
        )


@dataclass(frozen=True)
class Ran:
    """A run of a spec: fresh, or the cached run of the same key (then
    ``extra`` is what its caller stored with it)."""

    run: PytestRun
    targets: tuple[str, ...]  # the targets of the last attempt
    notes: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    stored: bool = False  # read from the cache (this command's run, or earlier)

    @property
    def cached(self) -> bool:
        return self.run.cached

    @property
    def finished(self) -> bool:
        """pytest ended on its own and wrote its JUnit XML."""
        return not self.run.timed_out and self.run.junit.is_file()


def run(
    spec: RunSpec,
    *,
    workspace: Callable[[], AbstractContextManager[Path]],
    cache: ResultCache | None = None,
    stream: bool = True,
    cancel: threading.Event | None = None,
    rerun: Rerun | None = None,
    reuse: bool = True,
) -> Ran:
    """The cached run of ``spec``'s key when the cache has one, else pytest
    in the folder ``workspace()`` yields (again with fewer targets while
    ``rerun`` asks for it). The workspace is entered only for a fresh run.
    A run of this command that did not finish (a hang, a crash) is that
    run again, not a second wait. ``reuse`` False: run now whatever the
    cache holds (an unfinished run is still noted for later asks)."""
    key = spec.key() if cache else None
    hit = cache.get(key) if cache and key and reuse else None
    if hit is not None:
        restored = hit.restore(spec.out_dir, spec.name, spec.targets)
        how = "cached" if restored.cached else "run by this command already"
        say(f"{spec.name}: {how} (tree {spec.tree[:12]}, same env and arguments)")
        return Ran(restored, spec.targets, extra=dict(hit.extra), stored=True)
    lost = cache.unfinished(key) if cache and key and reuse else None
    if lost is not None:
        say(
            f"{spec.name}: run by this command already (tree {spec.tree[:12]}), "
            "and it did not finish; not run again"
        )
        return Ran(lost.restore(spec.out_dir, spec.name), spec.targets, stored=True)
    with workspace() as folder:
        ran = _attempts(spec, folder, stream=stream, cancel=cancel, rerun=rerun)
    killed = cancel is not None and cancel.is_set()  # by a sibling's failure
    if cache is not None and key is not None and not ran.finished and not killed:
        cache.note_unfinished(key, ran.run)
    return ran


def _attempts(
    spec: RunSpec,
    folder: Path,
    *,
    stream: bool,
    cancel: threading.Event | None,
    rerun: Rerun | None,
) -> Ran:
    def once(targets: Sequence[str]) -> PytestRun:
        return run_pytest(
            spec.env,
            folder,
            list(targets),
            out_dir=spec.out_dir,
            name=spec.name,
            extra=list(spec.pytest_args),
            stream=stream,
            timeout=spec.timeout,
            cancel=cancel,
            place=spec.place,
        )

    targets, notes = spec.targets, []
    done = once(targets)
    again = rerun(done, targets) if rerun and not done.timed_out else None
    if again is not None and again[0]:
        targets, why = again
        notes.append(why)
        done = once(targets)
    return Ran(done, targets, tuple(notes))


def keep(
    spec: RunSpec,
    ran: Ran,
    *,
    cache: ResultCache | None,
    extra: Mapping[str, Any] | None = None,
) -> Ran:
    """Store a fresh, finished run in the cache under ``spec``'s key (with the
    caller's ``extra``); one read from the cache, or unfinished, is left as
    it is."""
    if cache is not None and not ran.stored and ran.finished:
        cache.put(spec.key(), ran.run, extra)
    return replace(ran, extra=dict(extra or {})) if extra else ran
