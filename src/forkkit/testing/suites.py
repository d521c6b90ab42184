# SPDX-License-Identifier: Apache-2.0
"""``forkkit suites``: upstream pytest suites on the fork tree, or pristine base.

Each run happens in a fresh checkout of a commit, through the fork-run
service (:class:`forkkit.testing.forkruns.ForkRuns`), as red/green's do.
The output (JUnit XML, log and ``suites.json`` naming the tree that ran) goes
into a fresh run folder, published as ``reports/suites`` (or ``--out``) when
the run ends, so it never mixes with an earlier run's files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from forkkit.config import ForkConfig
from forkkit.fork.tree import BASE_TAG, LocalChangesError, materialize
from forkkit.output.progress import say
from forkkit.output.report import SUITES, Report, dump_json
from forkkit.testing.cache import ResultCache
from forkkit.testing.env import ensure_testenv
from forkkit.testing.forkruns import ForkRuns
from forkkit.testing.pytest_run import PytestRun
from forkkit.vcs import Repo
from forkkit.vcs.overlay import snapshot_commit
from forkkit.workdir import published_path

STEM = "suites"
SNAPSHOT = "forkkit suites: the work tree as it is\n"


@dataclass(frozen=True)
class SuitesDoc(Report):
    """``suites.json``: the commit and tree that ran, and how pytest ended."""

    DOC = SUITES

    path: str  # the fork tree
    commit: str  # the commit checked out (a snapshot of the work tree)
    tree: str
    pristine: bool = False
    uncommitted: tuple[str, ...] = ()  # tested too: the tree as it is
    targets: tuple[str, ...] = ()
    command: str = ""
    returncode: int = 0
    timed_out: bool = False
    cached: bool = False


def tree_for_tests(cfg: ForkConfig, *, dest: Path | None, pristine: bool) -> Path:
    """The fork tree to test: materialized, or as it is while you edit it.

    Local edits are kept (and tested, unless ``pristine``, which only needs
    the tree's ``base`` tag).
    """
    try:
        path = materialize(cfg, dest=dest).path
    except LocalChangesError as exc:
        path = exc.path
    if not pristine and Repo(path).dirty():
        say(f"{path}: local changes; testing the tree as it is (not rebuilt)")
    return path


def run_suites(
    cfg: ForkConfig,
    tree: Path,
    targets: Sequence[str],
    *,
    extra: Sequence[str] = (),
    out: Path | None = None,
    pristine: bool = False,
) -> PytestRun:
    """Run ``targets`` in a checkout of a commit: ``base`` with ``pristine``,
    else HEAD with the work tree's uncommitted changes as they are (a
    snapshot commit; ``suites.json`` names its tree and lists the changes).
    Ignored files never run. The returned run names its JUnit XML and log
    where they are published."""
    repo = Repo(tree)
    with cfg.work.report_folder(STEM, out=out) as folder:
        uncommitted = [] if pristine else repo.dirty()
        if pristine:
            commit = repo.rev(BASE_TAG) or BASE_TAG
        else:
            commit = snapshot_commit(repo, message=SNAPSHOT)[0]
        runs = ForkRuns(
            runtime_files=(),
            env=ensure_testenv(cfg, tree),
            out_dir=folder.path,
            head=commit,
            pytest_args=tuple(extra),
            cache=ResultCache(cfg.work.results),
        )
        ran = runs.run(tree, commit, list(targets), name=STEM)
        doc = SuitesDoc(
            path=str(tree),
            pristine=pristine,
            commit=commit,
            tree=ran.tree,
            uncommitted=tuple(uncommitted),
            targets=tuple(targets),
            command=ran.run.command,
            returncode=ran.run.returncode,
            timed_out=ran.run.timed_out,
            cached=ran.cached,
        )
        (folder.path / f"{STEM}.json").write_text(dump_json(doc.document()))
        junit, log = published_path(ran.run.junit), published_path(ran.run.log)
    return dataclasses.replace(ran.run, junit=junit, log=log)
