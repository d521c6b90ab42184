# SPDX-License-Identifier: Apache-2.0
"""The fixes of a fork, read from its series, and what proves each one.

:mod:`forkkit.patches.fixes` assigns patches to fixes (pure); here the patch
files are read, a fix's focused tests are narrowed to the test functions its
patches change (read from the fork tree's commits), and a fix's red tree is
built: the fork's HEAD with that fix's runtime hunks reverse-applied and every
other fix kept, as a commit of its own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from forkkit import __version__
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.seriesfiles import load_series, read_pending
from forkkit.fork.state import ForkTree
from forkkit.patches.diff import parse_diff
from forkkit.patches.fixes import (
    Fix,
    assign,
    classes_changed,
    narrowed,
    nodes_defined,
    targets_changed,
)
from forkkit.patches.paths import is_runtime_path, is_test_path
from forkkit.patches.pending import PENDING_FILE
from forkkit.patches.series import Patch, Series, failed_hunk
from forkkit.pin import is_commit_id
from forkkit.txn import write_atomic
from forkkit.vcs import Repo
from forkkit.vcs.overlay import revert_patches_commit

SERIES_ID = "series"  # the whole series as one unit


@dataclass(frozen=True)
class FixSet:
    """Every fix of the series, with the patches they came from."""

    fixes: tuple[Fix, ...]
    patches: tuple[Patch, ...]
    config: str  # the config file's name, for messages

    def get(self, fid: str) -> Fix:
        """The fix ``fid``; one line naming the known ids otherwise."""
        for fix in self.fixes:
            if fix.id == fid:
                return fix
        ids = ", ".join(f.id for f in self.fixes) or "none"
        raise ForkkitError(f"--fix {fid}: no such fix in {self.config} (fixes: {ids})")

    def pick(self, fid: str | None) -> tuple[Fix, ...]:
        """``fid``'s fix alone, or every fix (None; one line when there is none)."""
        if fid is not None:
            return (self.get(fid),)
        if not self.fixes:
            raise ForkkitError(
                f"{self.config}: the series carries no fix; add one with its "
                "patches ('forkkit fix add', README: Carry your own fix)"
            )
        return self.fixes

    def one(self, fid: str | None = None) -> Fix:
        """``fid``'s fix; with None the series' only fix, or, for several, the
        whole series as one unit (what a rebase proves on its new base)."""
        if fid is not None:
            return self.get(fid)
        return self.pick(None)[0] if len(self.fixes) <= 1 else self.whole()

    def whole(self) -> Fix:
        """Every fix as one unit: red reverts every runtime hunk."""
        return Fix(
            id=SERIES_ID,
            title=self.title,
            forwarded="",
            origin="",
            related_suites=self.related_suites,
            patches=tuple(p.name for p in self.patches),
            runtime_files=self.runtime_files,
            test_files=self.test_files,
        )

    @property
    def runtime_files(self) -> tuple[str, ...]:
        return _union(f.runtime_files for f in self.fixes)

    @property
    def test_files(self) -> tuple[str, ...]:
        return _union(f.test_files for f in self.fixes)

    @property
    def related_suites(self) -> tuple[str, ...]:
        return _union(f.related_suites for f in self.fixes)

    @property
    def title(self) -> str:
        """The one fix's title; for several, theirs joined."""
        return "; ".join(f.title for f in self.fixes)

    def patch(self, name: str) -> Patch:
        return next(p for p in self.patches if p.name == name)


def _union(groups: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for group in groups:
        out.update(dict.fromkeys(group))
    return tuple(out)


def load_fixes(cfg: ForkConfig, series: Series | None = None) -> FixSet:
    """The fixes of ``cfg``'s series (one line for a patch of no fix)."""
    series = series or load_series(cfg.series_file, cfg.patches_dir)
    pending = {p.fix for p in read_pending(cfg.patches_dir / PENDING_FILE)}
    fixes = assign(cfg.fixes, series.patches, config=cfg.path.name, pending=pending)
    return FixSet(fixes=fixes, patches=series.patches, config=cfg.path.name)


def focused_targets(
    tree: ForkTree | Repo,
    fixes: FixSet,
    fix: Fix,
    *,
    head: str,
    commits: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """The pytest targets of ``fix``: each test module its patches add (whole),
    or the tests in it their changes lie in, as they are at ``head``.
    ``commits``: each patch's commit (default: the fork tree's)."""
    repo = tree if isinstance(tree, Repo) else Repo(tree.path)
    if commits is None:
        assert isinstance(tree, ForkTree)
        commits = dict(tree.patch_commits)
    # commit ids and patch digests name immutable content: one answer per
    # process, and one kept in the repository's git folder for the next one
    key = (str(repo.path), head, fix, tuple(sorted(commits.items())))
    fixed = is_commit_id(head) and all(is_commit_id(c) for c in commits.values())
    if fixed and key in _FOCUSED:
        return _FOCUSED[key]
    stored = _stored(repo, head=head, fix=fix, commits=commits) if fixed else None
    targets = _read_stored(stored)
    if targets is None:
        targets = _focused(repo, fixes, fix, head=head, commits=commits)
        _write_stored(stored, targets)
    if fixed:
        _FOCUSED[key] = targets
    return targets


_FOCUSED: dict[tuple[object, ...], tuple[str, ...]] = {}
FOCUSED_FORMAT = 3  # bump when what _focused answers changes


def _stored(repo: Repo, *, head: str, fix: Fix, commits: Mapping[str, str]) -> Path:
    """Where the answer for these exact inputs is kept: under the git folder
    of the repository forkkit built (derived from its objects alone, so a
    clean clone computes the same answer)."""
    key = json.dumps(
        [
            FOCUSED_FORMAT,
            __version__,
            head,
            [(p, commits.get(p, "")) for p in fix.patches],
            fix.patch_sha256,
            fix.test_files,
        ]
    )
    name = hashlib.sha256(key.encode()).hexdigest()
    return repo.git_dir() / "forkkit" / "focused" / f"{name}.json"


def _read_stored(path: Path | None) -> tuple[str, ...] | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # not kept yet, or damaged: measured again
    ok = isinstance(data, list) and all(isinstance(t, str) for t in data)
    return tuple(data) if ok else None


def _write_stored(path: Path | None, targets: tuple[str, ...]) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(list(targets)).encode())
    except OSError:
        pass  # a read-only repository: answered again next time


def _focused(
    repo: Repo, fixes: FixSet, fix: Fix, *, head: str, commits: Mapping[str, str]
) -> tuple[str, ...]:
    found: dict[str, set[str]] = {}
    for name in fix.patches:
        patch, commit = fixes.patch(name), commits.get(name)
        if commit is None:
            raise ForkkitError(
                f"{name}: not in the fork tree {repo.path}; run forkkit materialize"
            )
        for path in (p for p in patch.files if p in fix.test_files):
            found.setdefault(path, set()).update(
                _changed_tests(repo, commit=commit, patch=patch, path=path)
            )
    out: list[str] = []
    for path, targets in found.items():
        blob = repo.blob(head, path)
        if blob is None:  # a later patch removed it
            continue
        now = repo.read_blob(blob).decode(errors="replace")
        out += narrowed(targets, present=nodes_defined(path, now), path=path)
    return tuple(out)


def _changed_tests(repo: Repo, *, commit: str, patch: Patch, path: str) -> set[str]:
    if path in patch.added:
        return {path}
    blob = repo.blob(commit, path)
    if blob is None:  # the patch removed the file
        return set()
    source = repo.read_blob(blob).decode(errors="replace")
    # the commit's own diff, not the patch's hunks: a patch made on another
    # base applies at an offset, and its line numbers name other lines here
    diff = parse_diff(repo.diff(a=f"{commit}^", b=commit, paths=[path]), patch.name)
    hunks = [h for f in diff.files for h in f.hunks if h.path == path]
    return targets_changed(path, hunks=hunks, source=source)


def runtime_diffs(tree: ForkTree, fixes: FixSet, fix: Fix) -> list[tuple[Patch, str]]:
    """Each patch of ``fix`` with its commit's diff of the runtime files
    (renames, modes and binary files included), last patch first: the order
    that reverses them. Patches that change no runtime file are left out."""
    return list(reversed(_diffs(tree, fixes, fix, tests=False)))


def test_diffs(tree: ForkTree, fixes: FixSet, fix: Fix) -> list[tuple[Patch, str]]:
    """Each patch of ``fix`` with its commit's diff of the test files, in
    series order: the fix's test changes alone, to apply elsewhere."""
    return _diffs(tree, fixes, fix, tests=True)


def _diffs(
    tree: ForkTree, fixes: FixSet, fix: Fix, *, tests: bool
) -> list[tuple[Patch, str]]:
    repo = Repo(tree.path)
    commits = dict(tree.patch_commits)
    out = []
    for name in fix.patches:
        patch = fixes.patch(name)
        kind = is_test_path if tests else is_runtime_path
        paths = [f for f in patch.files if kind(f)]
        paths += [f for f in patch.old_paths if paths and kind(f)]
        commit = commits.get(name)
        if not paths:
            continue
        if commit is None:
            raise ForkkitError(
                f"{name}: not in the fork tree {repo.path}; run forkkit materialize"
            )
        out.append((patch, repo.diff(a=f"{commit}^", b=commit, paths=paths)))
    return out


def commit_classes(repo: Repo, commit: str, diff: str) -> set[str]:
    """The classes ``diff`` (``commit``'s own change) lies in, by name, each
    Python file read as ``commit`` has it."""
    found: set[str] = set()
    for changed in parse_diff(diff).files:
        blob = repo.blob(commit, changed.path)
        if blob and changed.path.endswith(".py"):
            source = repo.read_blob(blob).decode(errors="replace")
            found |= classes_changed(changed.hunks, source=source)
    return found


def changed_classes(tree: ForkTree, fixes: FixSet, fix: Fix) -> tuple[str, ...]:
    """The classes the fix's runtime change lies in, by name (what a
    validation error of its bug names), each read in its patch's commit."""
    repo = Repo(tree.path)
    commits = dict(tree.patch_commits)
    found: set[str] = set()
    for patch, diff in runtime_diffs(tree, fixes, fix):
        if patch.name in commits:
            found |= commit_classes(repo, commits[patch.name], diff)
    return tuple(sorted(found))


def red_commit(tree: ForkTree, fixes: FixSet, fix: Fix, *, head: str) -> str:
    """``head`` with ``fix``'s runtime changes reverse-applied, patch by patch
    (every other fix kept), committed; one line naming the hunk that does
    not reverse."""
    repo = Repo(tree.path)
    diffs = runtime_diffs(tree, fixes, fix)
    done = revert_patches_commit(
        repo,
        onto=head,
        patches=[text for _, text in diffs],
        message=f"forkkit red of fix {fix.id}: its runtime changes reverted\n",
    )
    if done.failed >= 0:
        patch = diffs[done.failed][0]
        applied = done.applied
        where = (
            failed_hunk(patch, applied.path, applied.line)
            if applied.kind == "hunk"
            else applied.path or applied.message
        )
        raise ForkkitError(
            f"{patch.name}: {where} does not reverse on the fork's HEAD "
            f"({applied.message}); a later patch changes the same lines: fold "
            f"that change into fix '{fix.id}' or refresh the patches"
        )
    return done.commit
