# SPDX-License-Identifier: Apache-2.0
"""``forkkit suites``: upstream pytest suites on the fork tree, or pristine base.

The output (JUnit XML, log and ``suites.json`` naming the tree that ran) goes
into a fresh run folder, published as ``reports/suites`` (or ``--out``) when
the run ends, so it never mixes with an earlier run's files.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from forkkit.config import ForkConfig
from forkkit.fork.tree import BASE_TAG, LocalChangesError, materialize
from forkkit.output.progress import say
from forkkit.output.report import SUITES, dump_json
from forkkit.testing.env import ensure_testenv
from forkkit.testing.pytest_run import PytestRun, run_pytest
from forkkit.testing.suiterun import report_folder
from forkkit.vcs import Repo
from forkkit.workdir import published_path

STEM = "suites"


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
    """Run ``targets`` in ``tree`` as it is (local edits included and listed in
    ``suites.json``), or with ``pristine`` in a scratch worktree of ``base``.

    The returned run names its JUnit XML and log where they are published.
    """
    repo = Repo(tree)
    with report_folder(cfg, STEM, out) as folder:
        if pristine:
            with repo.worktree(BASE_TAG, "pristine") as wt:
                env = ensure_testenv(cfg, wt.path)
                run = run_pytest(
                    env,
                    wt.path,
                    list(targets),
                    out_dir=folder.path,
                    name=STEM,
                    extra=list(extra),
                )
            ran: dict[str, Any] = {
                "commit": repo.rev(BASE_TAG),
                "tree": repo.tree(BASE_TAG),
            }
        else:
            ran = {
                "commit": repo.rev("HEAD"),
                "tree": repo.tree("HEAD"),
                "uncommitted": repo.dirty(),  # tested too: the tree as it is
            }
            env = ensure_testenv(cfg, tree)
            run = run_pytest(
                env,
                tree,
                list(targets),
                out_dir=folder.path,
                name=STEM,
                extra=list(extra),
            )
        doc = {
            "path": str(tree),
            "pristine": pristine,
            **ran,
            "targets": list(targets),
            "command": run.command,
            "returncode": run.returncode,
            "timed_out": run.timed_out,
        }
        (folder.path / f"{STEM}.json").write_text(dump_json(SUITES.stamp(doc)))
        junit, log = published_path(run.junit), published_path(run.log)
    return dataclasses.replace(run, junit=junit, log=log)
