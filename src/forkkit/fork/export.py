# SPDX-License-Identifier: Apache-2.0
"""``forkkit export``: write the fork tree's commits back as the patch series.

It refuses unless the fork tree is on branch ``fork`` and HEAD descends from
every commit the current series built; it never moves ``fork`` backwards.
The new patches must rebuild HEAD's tree exactly before anything is written;
``patches/`` and ``series`` then change in one transaction, and only files
the series named are ever deleted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork import state as forkstate
from forkkit.fork.seriesfiles import load_series, read_pending, read_series_text
from forkkit.fork.state import ForkTree
from forkkit.fork.tree import (
    BASE_TAG,
    FORK_BRANCH,
    apply_series,
    materialize,
    series_tree,
)
from forkkit.output.progress import say
from forkkit.patches.fixes import FIX_TRAILER, fix_trailer
from forkkit.patches.pending import PENDING_FILE
from forkkit.patches.series import (
    Series,
    parse_series_file,
    refuse_outside_links,
    rewrite_series_text,
)
from forkkit.txn import FileTransaction
from forkkit.vcs import Repo


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote (empty when there was nothing to export)."""

    names: tuple[str, ...]
    removed: tuple[str, ...]  # series entries the new series no longer has
    unknown: tuple[str, ...]  # *.patch files not in any series, left alone
    written: bool


def _refuse(path: Path, why: str) -> ForkkitError:
    return ForkkitError(f"{path}: {why}; nothing written")


def _built(repo: Repo, series: Series, *, rewrite: bool) -> ForkTree:
    """The completed build of the current series that HEAD descends from."""
    rec = forkstate.read(repo)
    if rec.building or rec.tree is None:
        raise _refuse(
            repo.path,
            "the fork tree is not a completed build (interrupted or from an "
            "older forkkit); run 'forkkit materialize' first",
        )
    tree = rec.tree
    if tree.series_digest != series.digest:
        raise _refuse(
            repo.path,
            "patches/ changed since the fork tree was built; export would "
            "overwrite those changes: run 'forkkit materialize' first",
        )
    branch = repo.branch()
    if branch != FORK_BRANCH:
        where = f"branch {branch}" if branch else "a detached HEAD"
        raise _refuse(
            repo.path,
            f"on {where}, not '{FORK_BRANCH}'; check it out "
            f"(git -C {repo.path} checkout {FORK_BRANCH}) and export again",
        )
    head = repo.rev("HEAD")
    if head is None or not repo.is_ancestor(tree.base, head):
        raise _refuse(repo.path, f"HEAD is not on top of '{BASE_TAG}'")
    if not rewrite and not repo.is_ancestor(tree.head, head):
        raise _refuse(
            repo.path,
            f"'{FORK_BRANCH}' does not contain the built series "
            f"({tree.head[:12]}); put your commits on top of it, or if you "
            "rewrote the series on purpose (rebase -i, --amend) rerun with "
            "--rewrite (patches no longer in HEAD are then removed)",
        )
    return tree


def _unfinished(repo: Repo, series: Series) -> bool:
    """An interrupted build, or an export stopped after writing ``patches/``."""
    rec = forkstate.read(repo)
    if rec.building:
        return True
    tree, head = rec.tree, repo.rev("HEAD")
    if tree is None or head is None or tree.series_digest == series.digest:
        return False
    return series_tree(repo, tree.base, series) == repo.tree(head)


def _check_tree(repo: Repo, tree: ForkTree, series: Series, *, head: str) -> None:
    dirty = repo.dirty()
    if dirty:
        raise _refuse(
            repo.path,
            f"uncommitted or untracked files ({dirty[0]}, {len(dirty)} in all); "
            "commit them (git commit -s) or move them away",
        )
    merges = repo.commits(f"{tree.base}..{head}", merges_only=True)
    if merges:
        raise _refuse(
            repo.path,
            f"merge commit {merges[0][:12]} in {BASE_TAG}..HEAD; a patch series "
            "must be linear (git rebase -i base)",
        )
    if tree.stopped_at:
        count = len(repo.commits(f"{tree.base}..{head}"))
        if count < len(series.patches):
            raise _refuse(
                repo.path,
                f"the series stopped at {tree.stopped_at} and HEAD has {count} of "
                f"its {len(series.patches)} patches; apply the rest "
                "(CONTRIBUTING.md, 'Refreshing a patch') before exporting",
            )


def _check_trailers(
    cfg: ForkConfig, repo: Repo, series: Series, *, base: str, head: str
) -> None:
    """One line for a commit of ``base..head`` that names no fix (no
    ``Forkkit-Fix:`` trailer), with the fixes it could belong to: those
    whose patches change a file it changes (else every declared one)."""
    if not cfg.fixes:
        return
    owners: dict[str, set[str]] = {}
    for patch in series.patches:
        fid = fix_trailer(patch.message)
        for path in patch.files if fid else ():
            owners.setdefault(path, set()).add(fid or "")
    for commit in repo.commits(f"{base}..{head}"):
        _, _, body = repo.message(commit).partition("\n")
        if fix_trailer(body) is not None:
            continue
        subject = (repo.message(commit).splitlines() or [""])[0][:60]
        files = repo.changed_paths(f"{commit}^", commit)
        near = sorted({f for path in files for f in owners.get(path, ())})
        ids = near or [d.id for d in cfg.fixes]
        raise _refuse(
            repo.path,
            f"commit {commit[:12]} ({subject}) "
            f"has no '{FIX_TRAILER}: ID' trailer, so it belongs to no fix; add "
            f"one naming {' or '.join(ids)} (git commit --amend, or git rebase -i "
            f"{BASE_TAG}), then export again",
        )


def export_series(
    cfg: ForkConfig, *, dest: Path | None = None, rewrite: bool = False
) -> ExportResult:
    """Write ``base..HEAD`` of the fork tree back to ``patches/``.

    ``rewrite`` accepts a HEAD that rewrote the built series (still on
    branch ``fork``, on top of ``base``). A build that was interrupted (a
    materialize, or the rebuild at the end of an earlier export) is finished
    first; it holds no commits of the user's.
    """
    tree_path = (dest or cfg.work.fork).absolute()
    patches_dir, series_file = cfg.patches_dir, cfg.series_file
    if not Repo.is_repo_root(tree_path):
        raise _refuse(tree_path, "not a fork tree; run 'forkkit materialize' first")
    repo = Repo(tree_path)
    series = load_series(series_file, patches_dir)
    if _unfinished(repo, series):
        say(f"{tree_path}: finishing an interrupted build first")
        materialize(cfg, dest=tree_path)
    tree = _built(repo, series, rewrite=rewrite)
    head = repo.rev("HEAD") or tree.head
    _check_tree(repo, tree, series, head=head)
    _check_trailers(cfg, repo, series, base=tree.base, head=head)
    old_text = read_series_text(series_file)
    unknown = _unknown(patches_dir, parse_series_file(old_text))
    if head == tree.head and not tree.stopped_at:
        say("nothing to export: the fork tree is exactly the built series")
        return ExportResult(names=(), removed=(), unknown=unknown, written=False)
    head_tree = repo.tree(head)
    names, removed = _write(cfg, repo, tree.base, head=head, old_text=old_text)
    waits = {p.name for p in read_pending(patches_dir / PENDING_FILE)}
    for name in unknown:
        why = f"waits in {PENDING_FILE}" if name in waits else "not in the series"
        say(f"left alone: {patches_dir / name} ({why})")
    _rebuild(repo, tree, series_file, patches_dir=patches_dir, head_tree=head_tree)
    return ExportResult(names=names, removed=removed, unknown=unknown, written=True)


def _unknown(patches_dir: Path, series_names: list[str]) -> tuple[str, ...]:
    """``*.patch`` files the series does not name: never written or deleted."""
    return tuple(
        sorted(
            p.name
            for p in patches_dir.glob("*.patch")
            if p.name not in series_names and p.is_file()
        )
    )


def _write(
    cfg: ForkConfig, repo: Repo, base: str, *, head: str, old_text: str
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Verify ``base..head`` as patches, then write them in one transaction."""
    patches_dir = cfg.patches_dir
    old_names = parse_series_file(old_text)
    unknown = _unknown(patches_dir, old_names)
    # in the workdir, not $TMPDIR: a killed export's is removed by the next one
    with cfg.work.scratch_folder("export") as tmp:
        files = repo.format_patch(f"{base}..{head}", tmp)
        for f in files:  # what every later command will refuse, refused now
            refuse_outside_links(f.read_text(errors="replace"), patches_dir / f.name)
        say(f"checking that {len(files)} patch(es) rebuild HEAD's tree")
        _verify(repo, base, files, head_tree=repo.tree(head))
        names = [f.name for f in files]
        clash = sorted(set(names) & set(unknown))
        if clash:
            raise _refuse(
                patches_dir / clash[0],
                "a file forkkit did not write has the exported patch's name; "
                "rename or remove it",
            )
        txn = FileTransaction(root=cfg.root)
        for f in files:
            txn.write(patches_dir / f.name, f.read_bytes())
    removed = tuple(n for n in old_names if n not in names)
    for name in removed:
        txn.delete(patches_dir / name)
    txn.write(cfg.series_file, rewrite_series_text(old_text, names))
    say(f"writing {len(names)} patch(es) to {patches_dir.name}/")
    txn.commit()
    return tuple(names), removed


def _verify(repo: Repo, base: str, files: list[Path], *, head_tree: str) -> None:
    with repo.scratch_index("export") as index:
        index.read_tree(base)
        for patch in files:
            result = index.apply(patch)
            if not result.ok:
                raise _refuse(
                    repo.path,
                    f"exported patch {patch.name} does not re-apply "
                    f"({result.message}); check the fork tree's commits",
                )
        if index.write_tree() != head_tree:
            raise _refuse(
                repo.path,
                "the exported patches do not reproduce HEAD's tree "
                "(binary or mode-only changes?)",
            )


def _rebuild(
    repo: Repo,
    tree: ForkTree,
    series_file: Path,
    *,
    patches_dir: Path,
    head_tree: str,
) -> None:
    """Rebuild the fork tree from the written series, as materialize would.

    The user's commits are already in ``patches/`` (the transaction committed),
    so an interruption here only leaves a build that the next command redoes.
    """
    series = load_series(series_file, patches_dir)
    say(f"rebuilding {repo.path} from the written series")
    marker = forkstate.start_build(repo, what=f"export {series.digest}")
    marker = forkstate.touch_worktree(repo, marker=marker, to=tree.base)
    repo.abort_operations()
    repo.force_checkout(branch=FORK_BRANCH, rev=tree.base)
    commits = apply_series(repo, series, tree.upstream_label)
    head = repo.rev("HEAD") or tree.base
    if repo.tree(head) != head_tree:
        raise ForkkitError(
            f"{repo.path}: the re-applied series differs from the exported "
            "commits; run 'forkkit materialize' and compare with git diff"
        )
    new = replace(
        tree,
        head=head,
        series_digest=series.digest,
        patch_commits=tuple(commits),
        stopped_at=None,
    )
    forkstate.finish_build(repo, new, marker=marker)
