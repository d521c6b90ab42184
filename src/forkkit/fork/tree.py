# SPDX-License-Identifier: Apache-2.0
"""Materialize the fork: a git repo of pristine upstream (tag ``base``) + patches.

The state of a build lives in git refs (:mod:`forkkit.fork.state`) and is
recorded only when the build completes; a build interrupted at any point is
recognised as forkkit's own unfinished work and rebuilt. A repository whose
records do not prove that forkkit built it is never reset, whatever the flags.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError, first_few
from forkkit.fork import kept
from forkkit.fork import state as forkstate
from forkkit.fork.pristine import pristine_commit, resolved
from forkkit.fork.seriesfiles import load_series
from forkkit.fork.state import ForkTree
from forkkit.output.progress import say, step
from forkkit.patches.series import Patch, Series, failed_hunk
from forkkit.pin import UpstreamSpec
from forkkit.vcs import ApplyResult, Repo
from forkkit.workdir import Workdir

BASE_TAG = "base"
FORK_BRANCH = "fork"

__all__ = [
    "BASE_TAG",
    "FORK_BRANCH",
    "ForkTree",
    "LocalChangesError",
    "apply_series",
    "make_base",
    "materialize",
    "series_tree",
]


class SeriesStopped(ForkkitError):
    """A patch did not apply; ``commits`` holds the patches applied before it."""

    def __init__(self, error: ForkkitError, commits: list[tuple[str, str]]) -> None:
        self.commits = tuple(commits)
        super().__init__(str(error))


class LocalChangesError(ForkkitError):
    """The fork tree has edits or commits of its own; it was left untouched."""

    def __init__(self, path: Path, why: str) -> None:
        self.path = path
        super().__init__(f"{path}: {why}")


def make_base(repo: Repo, spec: UpstreamSpec, work: Workdir) -> tuple[str, str | None]:
    """The root commit holding the pristine tree; return (sha, upstream commit).

    Reuses the base recorded for this pin; otherwise builds it from the
    verified upstream and records it.
    """
    base = pristine_commit(repo, spec=spec, work=work)
    repo.tag(BASE_TAG, base.commit)
    return base.commit, base.upstream_commit


def apply_failure(patch: Patch, result: ApplyResult, label: str) -> ForkkitError:
    """A one-line error naming the patch, the file and the hunk that failed."""
    if b"\r\n" in patch.path.read_bytes():
        return ForkkitError(
            f"{patch.name}: does not apply to {label}, and its lines end in CRLF "
            "(an editor or git's autocrlf converted it): convert them to LF "
            "(e.g. dos2unix); this repository keeps *.patch eol=lf in .gitattributes"
        )
    if result.kind == "hunk":
        where = failed_hunk(patch, result.path, result.line)
        return ForkkitError(
            f"{patch.name}: {where} does not apply to {label}; "
            "refresh the patch (CONTRIBUTING.md, 'Refreshing a patch')"
        )
    if result.kind == "missing":
        return ForkkitError(
            f"{patch.name}: {result.path} does not exist in {label}; "
            "the file moved upstream, refresh the patch"
        )
    if result.kind == "exists":
        return ForkkitError(
            f"{patch.name}: {result.path} already exists in {label}; "
            "drop or refresh the patch"
        )
    return ForkkitError(f"{patch.name}: does not apply to {label} ({result.message})")


def apply_series(repo: Repo, series: Series, label: str) -> list[tuple[str, str]]:
    """Apply each patch as one commit on the current HEAD."""
    commits: list[tuple[str, str]] = []
    for i, patch in enumerate(series.patches, 1):
        say(f"applying {i}/{len(series.patches)}: {patch.name}")
        result = repo.am(patch.path)
        if not result.ok:
            raise SeriesStopped(apply_failure(patch, result, label), commits)
        head = repo.rev("HEAD")
        assert head
        commits.append((patch.name, head))
    return commits


def series_tree(repo: Repo, base: str, series: Series) -> str | None:
    """The tree ``series`` gives on ``base`` (a scratch index), None if it fails."""
    with repo.scratch_index("series") as index:
        index.read_tree(base)
        for patch in series.patches:
            if not index.apply(patch.path).ok:
                return None
        return index.write_tree()


def _open(dest: Path) -> Repo:
    if Repo.is_repo_root(dest):
        return Repo(dest)
    if dest.is_file() or (dest.is_dir() and any(dest.iterdir())):
        raise ForkkitError(
            f"{dest}: not empty and not a fork tree; pick a new or empty folder"
        )
    try:
        return Repo.init(dest)
    except OSError as exc:
        raise ForkkitError(
            f"{dest}: cannot create the fork tree ({exc.strerror}); "
            "pick a writable folder (forkkit materialize --dest DIR)"
        ) from None


def _only_forkkit_commits(repo: Repo, head: str) -> bool:
    from forkkit.vcs import BOT_EMAIL

    return all(email == BOT_EMAIL for email in repo.committer_emails(head))


def _holds_series(repo: Repo, head: str, base: str | None, *, series: Series) -> bool:
    """Whether HEAD's tree is exactly what ``series`` gives (nothing to lose)."""
    return base is not None and series_tree(repo, base, series) == repo.tree(head)


def _check(
    repo: Repo, rec: forkstate.Recorded, *, spec: UpstreamSpec, series: Series
) -> ForkTree | None:
    """The up-to-date tree, None when a rebuild loses nothing, else raise."""
    head = repo.rev("HEAD")
    if head is None:
        return None
    base = forkstate.pinned_base(repo, spec.ident) or repo.rev(BASE_TAG)
    if rec.building:
        _refuse_user_files(repo, forkstate.building(repo, rec.building), series)
        if _only_forkkit_commits(repo, head) or _holds_series(
            repo, head, base, series=series
        ):
            return None  # forkkit's own unfinished build
        if base is not None and kept.yours_on_top(repo, base=base, head=head):
            kept.keep(repo, head)  # picked onto the finished build next
            say(f"{repo.path}: keeping your commits at {kept.KEPT_REF}")
            return None
        raise LocalChangesError(
            repo.path,
            "an interrupted build has commits of yours on top; save them with "
            "git format-patch, or discard them with 'forkkit materialize --force'",
        )
    tree = rec.tree
    if tree is not None and head == tree.head:
        fresh = tree.upstream == spec.ident and tree.series_digest == series.digest
        if fresh and not tree.stopped_at and base == tree.base:
            return tree  # nothing to do, so nothing is touched
    dirty = repo.dirty()
    if dirty:
        raise LocalChangesError(
            repo.path,
            f"uncommitted or untracked files in the fork tree ({first_few(dirty)}) "
            "would be lost by the rebuild; commit them and run 'forkkit export', "
            "move them away, or discard them with 'forkkit materialize --force'",
        )
    if tree is not None and head == tree.head:
        return None  # our own build of another series or pin
    if tree is None or _holds_series(repo, head, base, series=series):
        return None  # a legacy state at its head, or commits already in patches/
    raise _moved(repo, tree, head=head, series=series)


def _refuse_user_files(repo: Repo, build: forkstate.Building, series: Series) -> None:
    """Refuse a rebuild over files an unfinished build did not write.

    A build that stopped before the work tree (a failed download, a wrong
    pin) wrote none of them; one that stopped while moving it wrote at most
    the files that differ between the commits it moved between, and those
    of its patches. Anything else that is dirty or untracked is the user's.
    """
    dirty = repo.dirty()
    if build.touched and build.moved is None:
        return  # a marker that does not say what moved: as before the phases
    if build.touched and build.moved:
        written = _build_blobs(repo, build.moved, series)
        dirty = [p for p in dirty if repo.worktree_blob(p) not in written.get(p, ())]
    if dirty:
        raise LocalChangesError(
            repo.path,
            f"an unfinished build, and files it did not write ({first_few(dirty)}): "
            "a rebuild would lose them; commit them and run 'forkkit export', "
            "move them away, or discard them with 'forkkit materialize --force'",
        )


def _build_blobs(
    repo: Repo, moved: tuple[str, str], series: Series
) -> dict[str, set[str | None]]:
    """Each path an unfinished build may have written, and every content it
    could have left there (None: no file): as at the commits it moved
    between, at each patch commit it made since, or after the patch it was
    applying. A file with any other content is not the build's."""
    head = repo.rev("HEAD") or moved[1]
    revs = [*moved, *repo.commits(f"{moved[1]}..{head}")]
    paths = set(repo.changed_paths(*moved)) | {
        f for p in series.patches for f in p.files
    }
    paths |= set(repo.changed_paths(moved[1], head))
    found: dict[str, set[str | None]] = {
        p: {repo.object_id(f"{rev}:{p}") for rev in revs} for p in paths
    }
    done = len(revs) - 2
    if done < len(series.patches):  # the patch it was applying when it stopped
        with repo.scratch_index("next-patch") as index:
            index.read_tree(head)
            if index.apply(series.patches[done].path).ok:
                after = index.entries(tuple(series.patches[done].files))
                for p in series.patches[done].files:
                    found.setdefault(p, set()).add(after.get(p))
    return found


def _moved(
    repo: Repo, tree: ForkTree, *, head: str, series: Series
) -> LocalChangesError:
    branch = repo.branch()
    if branch == FORK_BRANCH and repo.is_ancestor(tree.head, head):
        n = len(repo.commits(f"{tree.head}..{head}"))
        if tree.series_digest == series.digest:
            why = "save them with 'forkkit export'"
        else:
            why = (
                "patches/ also changed since the build: restore patches/ "
                "and run 'forkkit export'"
            )
        return LocalChangesError(
            repo.path,
            f"{n} commit(s) of yours on top of the built series; {why}, "
            "or discard them with 'forkkit materialize --force'",
        )
    where = f"branch {branch}" if branch else f"{head[:12]} (detached)"
    return LocalChangesError(
        repo.path,
        f"HEAD is at {where}, not at the built series; check out "
        f"'{FORK_BRANCH}' again (git -C {repo.path} checkout {FORK_BRANCH}), "
        "or discard your state with 'forkkit materialize --force'",
    )


def materialize(
    cfg: ForkConfig,
    *,
    dest: Path | None = None,
    spec: UpstreamSpec | None = None,
    series: Series | None = None,
    force: bool = False,
) -> ForkTree:
    """Build (or reuse) the fork repo: commit 1 = pristine upstream, then patches.

    Idempotent: when upstream, the patch bytes and HEAD all match the recorded
    state, nothing is touched. A fork tree with edits, untracked files or
    commits of its own is never rebuilt unless ``force``; a repository that
    forkkit did not build is never rebuilt at all.
    """
    series = series or load_series(cfg.series_file, cfg.patches_dir)
    dest = (dest or cfg.work.fork).absolute()
    made = [p for p in (dest, dest / ".git") if not p.exists()]
    repo = _open(dest)
    rec = forkstate.read(repo)
    if repo.rev("HEAD") is not None and not rec.ours:
        raise ForkkitError(
            f"{dest}: a git repository forkkit did not build; forkkit never "
            "resets it, not even with --force: pick another folder "
            "(forkkit materialize --dest DIR)"
        )
    spec = resolved(repo, spec or cfg.upstream)
    for old in repo.prune_stale_worktrees():  # a killed run's, even if all is cached
        say(f"removed stale worktree {old}")
    if not force:
        current = _check(repo, rec, spec=spec, series=series)
        if current is not None:
            say(f"fork tree up to date at {dest}")
            kept.replay_kept(repo, current)
            return current
    else:
        kept.drop(repo)
        if rec.building:
            say(f"{dest}: finishing an interrupted build")
    try:
        built = _build(repo, cfg=cfg, spec=spec, series=series)
        kept.replay_kept(repo, built)
        return built
    except SeriesStopped:
        raise
    except BaseException:
        if made and repo.rev("HEAD") is None:  # leave no empty repo of ours behind
            shutil.rmtree(made[0], ignore_errors=True)
        raise


def _build(
    repo: Repo, *, cfg: ForkConfig, spec: UpstreamSpec, series: Series
) -> ForkTree:
    """Rebuild base + series; the state is recorded only once it is done."""
    marker = forkstate.start_build(repo, what=f"{spec.ident} {series.digest}")
    base, upstream_commit = make_base(repo, spec, cfg.work)
    marker = forkstate.touch_worktree(repo, marker=marker, to=base)
    repo.abort_operations()
    with step(f"checking out {spec.label} into {repo.path}"):
        repo.force_checkout(branch=FORK_BRANCH, rev=base)
    tree = ForkTree(
        path=repo.path,
        upstream=spec.ident,
        upstream_label=spec.label,
        upstream_commit=upstream_commit,
        base=base,
        base_tree=repo.tree(base),
        head=base,
        series_digest=series.digest,
        patch_commits=(),
    )
    try:
        commits = apply_series(repo, series, spec.label)
    except SeriesStopped as exc:
        # Recorded as stopped at the failing patch: the user may apply the
        # rest by hand and export (CONTRIBUTING.md, 'Refreshing a patch').
        stopped = series.patches[len(exc.commits)].name
        tree = replace(tree, head=repo.rev("HEAD") or base, stopped_at=stopped)
        forkstate.finish_build(
            repo, replace(tree, patch_commits=exc.commits), marker=marker
        )
        raise
    tree = replace(tree, head=repo.rev("HEAD") or base, patch_commits=tuple(commits))
    forkstate.finish_build(repo, tree, marker=marker)
    say(f"fork tree ready at {repo.path}: {len(commits)} patch(es) on {spec.label}")
    return tree
