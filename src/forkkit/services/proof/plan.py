# SPDX-License-Identifier: Apache-2.0
"""What a red/green proof runs, checked before anything runs, and the
settings every one of its pytest runs shares."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.tree import BASE_TAG, ForkTree
from forkkit.patches.paths import is_test_path
from forkkit.patches.retired import TESTS_ONLY_TRAILER
from forkkit.patches.testids import target_file
from forkkit.services.proof.model import UPSTREAM_BASE, FileBlob, base_label
from forkkit.testing.suiterun import (
    require_committed,
)
from forkkit.vcs import Repo


@dataclass(frozen=True)
class Plan:
    """What a proof runs, checked before anything runs."""

    targets: tuple[str, ...]
    runtime: tuple[str, ...]
    suites: tuple[str, ...]
    base: str  # the commit red takes the runtime files from
    head: str
    base_label: str = UPSTREAM_BASE
    guard: bool = False  # a tests-only series: its tests guard upstream's fix


def make_plan(
    cfg: ForkConfig,
    tree: ForkTree,
    tests: list[str] | None,
    *,
    related: bool,
    base: str | None = None,
) -> Plan:
    """Validate fork.toml [fix] against the fork; refuse an uncommitted tree.
    ``base``: the revision red takes the runtime files from (None: tag base)."""
    repo = tree.repo
    targets = tuple(tests or cfg.fix.focused_tests)
    runtime = tuple(cfg.fix.runtime_files)
    where = f"{cfg.path.name} [fix]"
    if not runtime:
        raise ForkkitError(
            f"{where}: runtime_files is empty; list the files the fix changes"
        )
    if not targets:
        raise ForkkitError(f"{where}: focused_tests is empty; list the fix's tests")
    head, upstream = repo.rev("HEAD"), repo.rev(BASE_TAG)
    if head is None or upstream is None:
        raise ForkkitError(f"{repo.path}: no '{BASE_TAG}' tag; run forkkit materialize")
    red = _red_base(tree, base, head=head, upstream=upstream)
    for f in runtime:
        if repo.blob(red, f) is None and repo.blob(head, f) is None:
            raise ForkkitError(
                f"{where}: runtime file {f!r} exists neither at base nor at fork HEAD; "
                "fix the path"
            )
    suites = tuple(cfg.fix.related_suites) if related else ()
    for t in [*targets, *suites]:
        path = target_file(t).rstrip("/")
        if repo.object_id(f"{head}:{path}") is None:
            raise ForkkitError(
                f"{where}: test target {path!r} does not exist at fork HEAD "
                f"{head[:12]}; fix the path (fork.toml [fix] or --tests)"
            )
    require_committed(repo, "red-green")
    label = base_label(
        red, rev=base or BASE_TAG, upstream_base=upstream, patches=tree.patch_commits
    )
    guard = base is None and tests_only(tree, runtime, head=head, upstream=upstream)
    return Plan(targets, runtime, suites, red, head, label, guard)


def tests_only(
    tree: ForkTree, runtime: Sequence[str], *, head: str, upstream: str
) -> bool:
    """The series only carries tests, and some patch of it is a tests-only
    patch (its runtime change absorbed upstream: the ``Forkkit-Tests-Only``
    trailer): red would be green's tree, so the proof is a guard."""
    repo = tree.repo
    commits = [c for _, c in tree.patch_commits]
    if not any(f"\n{TESTS_ONLY_TRAILER}:" in f"\n{repo.message(c)}" for c in commits):
        return False
    changed = repo.changed_paths(upstream, head)
    return all(is_test_path(p) for p in changed) and all(
        repo.blob(upstream, f) == repo.blob(head, f) for f in runtime
    )


def _red_base(tree: ForkTree, rev: str | None, *, head: str, upstream: str) -> str:
    """The commit ``rev`` names, checked to be a commit of the fork tree
    before its HEAD (on or after the tag base); ``upstream`` when None."""
    if rev is None:
        return upstream
    repo = tree.repo
    commit = repo.rev(rev)
    if commit is None:
        raise ForkkitError(
            f"--base {rev}: no such commit in {repo.path}; give a commit of the "
            "fork tree, or --base-patch NAME for the commit of a patch"
        )
    if commit == head:
        raise ForkkitError(
            f"--base {rev}: is the fork's HEAD, red would test the fix itself; "
            "give an earlier commit (--base-patch NAME: the commit of a patch)"
        )
    if not (repo.is_ancestor(upstream, commit) and repo.is_ancestor(commit, head)):
        raise ForkkitError(
            f"--base {rev}: commit {commit[:12]} is not in the fork tree's "
            f"history from the '{BASE_TAG}' tag to HEAD; give a commit of it"
        )
    return commit


def file_blobs(repo: Repo, plan: Plan) -> list[FileBlob]:
    """Blob SHAs of the runtime files and of every file under the test targets."""
    base, head = plan.base, plan.head
    out = [
        FileBlob(f, "runtime", repo.blob(base, f), repo.blob(head, f))
        for f in plan.runtime
    ]
    paths = sorted({target_file(t) for t in plan.targets})
    at_base, at_head = repo.ls_tree(base, paths), repo.ls_tree(head, paths)
    out += [
        FileBlob(p, "test", at_base.get(p), blob)
        for p, blob in at_head.items()
        if p.endswith(".py")
    ]
    return out
