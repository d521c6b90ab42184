"""Materialize the fork: a git repo of pristine upstream (tag ``base``) + patches."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from forkkit.config import ForkConfig, UpstreamSpec
from forkkit.errors import ForkkitError
from forkkit.git import Git
from forkkit.progress import say, step
from forkkit.series import (
    Patch,
    Series,
    hunk_at,
    load_series,
    parse_series_file,
)
from forkkit.upstream import extract_sdist, fetch_git_rev, fetch_sdist

STATE_FILE = "forkkit-state.json"
BASE_TAG = "base"
FORK_BRANCH = "fork"
_TRAILER = "Forkkit-Upstream"


class LocalChangesError(ForkkitError):
    """The fork tree has edits or commits of its own; it was left untouched."""

    def __init__(self, path: Path) -> None:
        self.path = path
        super().__init__(
            f"{path}: the fork tree has local changes or commits; save them "
            "with 'forkkit export' or rerun with --force to discard them"
        )


@dataclass(frozen=True)
class ForkTree:
    """A materialized fork: where it is and what each commit holds."""

    path: Path
    upstream: str  # UpstreamSpec.ident
    upstream_label: str
    upstream_commit: str | None  # the upstream git commit (git-source mode)
    base: str  # our root commit: the pristine tree
    base_tree: str
    head: str
    series_digest: str
    patch_commits: tuple[tuple[str, str], ...]  # (patch name, commit)

    @property
    def git(self) -> Git:
        return Git(self.path)

    @classmethod
    def from_state(cls, path: Path, state: dict[str, Any]) -> ForkTree:
        """Rebuild from the recorded state file (KeyError if incomplete)."""
        names = [f.name for f in fields(cls) if f.name not in ("path", "patch_commits")]
        values = {name: state[name] for name in names}
        commits = tuple((str(n), str(c)) for n, c in state["patch_commits"])
        return cls(path=path, patch_commits=commits, **values)

    def to_json(self) -> dict[str, object]:
        d = asdict(self)
        d["path"] = str(self.path)
        return d


def _state_path(git: Git) -> Path:
    return Path(git.out("rev-parse", "--absolute-git-dir")) / STATE_FILE


def _read_state(git: Git) -> dict[str, Any] | None:
    try:
        data = json.loads(_state_path(git).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _existing_base(git: Git, ident: str) -> str | None:
    sha = git.rev(BASE_TAG)
    if sha and f"{_TRAILER}: {ident}" in git.out("log", "-1", "--format=%B", sha):
        return sha
    return None


def tree_of_directory(git: Git, src: Path) -> str:
    """Write every file under ``src`` (an extracted sdist) as a git tree object.

    Uses a private index, so the repository's own index and work tree are
    untouched; ``--force`` because sdists ship files their .gitignore names.
    """
    index = Path(git.out("rev-parse", "--absolute-git-dir")) / "forkkit-tree.idx"
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git.run("--work-tree", str(src), "add", "-A", "--force", ".", extra_env=env)
        git.run(
            "--work-tree",
            str(src),
            "rm",
            "-q",
            "--cached",
            "--ignore-unmatch",
            ".forkkit-extracted",
            extra_env=env,
        )
        return git.run("write-tree", extra_env=env).stdout.strip()
    finally:
        index.unlink(missing_ok=True)


def _make_base(git: Git, spec: UpstreamSpec, workdir: Path) -> tuple[str, str | None]:
    """Create the root commit holding the pristine tree; return (sha, upstream)."""
    upstream_commit: str | None = None
    if spec.source == "git":
        upstream_commit = fetch_git_rev(git, spec.git_url, spec.git_rev)
        tree = git.out("rev-parse", f"{upstream_commit}^{{tree}}")
        origin = f"{spec.git_url} at {upstream_commit}"
    else:
        archive = fetch_sdist(spec, workdir / "cache" / "sdist")
        src = extract_sdist(
            archive, workdir / "upstream" / f"{spec.name}-{spec.version}", spec.sha256
        )
        with step(f"committing pristine {spec.label} ({archive.name})"):
            tree = tree_of_directory(git, src)
        origin = f"{archive.name} (sha256 {spec.sha256})"
    msg = (
        f"Upstream {spec.label} (pristine)\n\n"
        f"Pristine tree of {origin}.\n\n{_TRAILER}: {spec.ident}\n"
    )
    if upstream_commit:
        msg += f"Forkkit-Upstream-Commit: {upstream_commit}\n"
    sha = git.out("commit-tree", tree, "-m", msg)
    git.run("tag", "-f", BASE_TAG, sha)
    return sha, upstream_commit


def _apply_failure(git: Git, patch: Patch, label: str) -> ForkkitError:
    """Turn a failed ``git am`` into a one-line error naming patch, file, hunk."""
    proc = git.run("apply", "--check", "--verbose", str(patch.path), check=False)
    text = proc.stderr + proc.stdout
    m = re.search(r"error: patch failed: (.+):(\d+)", text)
    if m:
        hunk = hunk_at(patch, m.group(1), int(m.group(2)))
        where = hunk.describe() if hunk else f"{m.group(1)} line {m.group(2)}"
        return ForkkitError(
            f"{patch.name}: {where} does not apply to {label}; "
            "refresh the patch (CONTRIBUTING.md, 'Refreshing a patch')"
        )
    m = re.search(r"error: (.+?): (does not exist in index|No such file)", text)
    if m:
        return ForkkitError(
            f"{patch.name}: {m.group(1)} does not exist in {label}; "
            "the file moved upstream, refresh the patch"
        )
    m = re.search(r"error: (.+?): already exists", text)
    if m:
        return ForkkitError(
            f"{patch.name}: {m.group(1)} already exists in {label}; "
            "drop or refresh the patch"
        )
    last = text.strip().splitlines()[-1] if text.strip() else "git am failed"
    return ForkkitError(f"{patch.name}: does not apply to {label} ({last})")


def apply_series(git: Git, series: Series, label: str) -> list[tuple[str, str]]:
    """Apply each patch as one commit on the current HEAD."""
    commits = []
    for i, patch in enumerate(series.patches, 1):
        say(f"applying {i}/{len(series.patches)}: {patch.name}")
        proc = git.run(
            "am",
            "-q",
            "--keep-cr",
            # keep "[Bugfix][Core] ..." subjects: strip only "[PATCH ...]"
            "--keep-non-patch",
            "--committer-date-is-author-date",
            str(patch.path),
            check=False,
        )
        if proc.returncode != 0:
            err = _apply_failure(git, patch, label)
            git.run("am", "--abort", check=False)
            raise err
        commits.append((patch.name, git.out("rev-parse", "HEAD")))
    return commits


def _untracked(git: Git) -> list[str]:
    """Untracked files that are not ignored (a rebuild would delete them)."""
    out = git.run("ls-files", "--others", "--exclude-standard", "-z").stdout
    return [p for p in out.split("\0") if p]


def _write_state(git: Git, state: dict[str, object]) -> None:
    _state_path(git).write_text(json.dumps(state, indent=2) + "\n")


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
    state, nothing is touched. A fork tree with local edits or commits of its
    own is never overwritten unless ``force`` (export them first).
    """
    spec = spec or cfg.upstream
    series = series or load_series(cfg.series_file, cfg.patches_dir)
    dest = (dest or cfg.workdir / "fork").absolute()
    if (dest / ".git").exists():
        git = Git(dest)
    elif dest.is_dir() and any(dest.iterdir()):
        raise ForkkitError(
            f"{dest}: not empty and not a fork tree; pick a new or empty folder"
        )
    else:
        git = Git.init(dest)
    state = _read_state(git)
    head = git.rev("HEAD")
    if head and state is None and not force:
        raise ForkkitError(
            f"{dest}: a git repository forkkit did not build (no state); pick "
            "another folder, or rerun with --force to reset it"
        )
    if state and head and not force:
        if head != state.get("head") or not git.is_clean():
            raise LocalChangesError(dest)
        if (
            state.get("upstream") == spec.ident
            and state.get("series_digest") == series.digest
        ):
            try:
                tree = ForkTree.from_state(dest, state)
            except (KeyError, TypeError, ValueError):
                pass  # a state file of another forkkit version: rebuild
            else:
                say(f"fork tree up to date at {dest}")
                return tree
        stray = _untracked(git)
        if stray:
            raise ForkkitError(
                f"{dest / stray[0]}: untracked file in the fork tree (of "
                f"{len(stray)}) would be deleted by the rebuild; commit and "
                "export it, move it away, or rerun with --force"
            )

    base = _existing_base(git, spec.ident)
    upstream_commit = None
    if base is None:
        base, upstream_commit = _make_base(git, spec, cfg.workdir)
    elif spec.source == "git":
        m = re.search(
            r"^Forkkit-Upstream-Commit: (\w+)$",
            git.out("log", "-1", "--format=%B", base),
            re.M,
        )
        upstream_commit = m.group(1) if m else None
    git.run("am", "--abort", check=False)
    with step(f"checking out {spec.label} into {dest}"):
        git.run("checkout", "-q", "-f", "-B", FORK_BRANCH, base)
        git.run("clean", "-q", "-fd")
    base_tree = git.out("rev-parse", f"{base}^{{tree}}")
    partial: dict[str, object] = {
        "upstream": spec.ident,
        "upstream_label": spec.label,
        "upstream_commit": upstream_commit,
        "base": base,
        "base_tree": base_tree,
        "head": base,
        "series_digest": "",  # never matches: the next call rebuilds
        "patch_commits": [],
    }
    _write_state(git, partial)
    try:
        commits = apply_series(git, series, spec.label)
    except ForkkitError:
        # Leave the tree at the last patch that applied, recorded as
        # incomplete: the user may finish the series by hand and export it.
        partial["head"] = git.out("rev-parse", "HEAD")
        _write_state(git, partial)
        raise
    tree = ForkTree(
        path=dest,
        upstream=spec.ident,
        upstream_label=spec.label,
        upstream_commit=upstream_commit,
        base=base,
        base_tree=base_tree,
        head=git.out("rev-parse", "HEAD"),
        series_digest=series.digest,
        patch_commits=tuple(commits),
    )
    _save(tree)
    say(f"fork tree ready at {dest}: {len(commits)} patch(es) on {spec.label}")
    return tree


def _save(tree: ForkTree) -> None:
    state = tree.to_json()
    state.pop("path")
    _write_state(tree.git, state)


def _series_tree(git: Git, base: str, patch_files: list[Path]) -> str:
    """The tree ``patch_files`` produce on ``base`` (a scratch index; no checkout)."""
    index = Path(git.out("rev-parse", "--absolute-git-dir")) / "forkkit-export.idx"
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        git.run("read-tree", base, extra_env=env)
        for patch in patch_files:
            proc = git.run("apply", "--cached", str(patch), check=False, extra_env=env)
            if proc.returncode != 0:
                last = (proc.stderr.strip().splitlines() or ["git apply failed"])[-1]
                raise ForkkitError(
                    f"{patch.name}: exported patch does not re-apply ({last}); "
                    "nothing written, check the fork tree's commits"
                )
        return git.run("write-tree", extra_env=env).stdout.strip()
    finally:
        index.unlink(missing_ok=True)


def export_series(tree_path: Path, patches_dir: Path, series_file: Path) -> list[str]:
    """Write ``base..HEAD`` of a fork tree back as the patch series.

    The patches are verified first (applied to ``base`` they must give exactly
    HEAD's tree); on any failure nothing is written. Afterwards the fork tree
    is rebuilt from the written series, as ``materialize`` would build it, so
    the next ``materialize`` is a no-op.
    """
    git = Git(tree_path)
    base = git.rev(BASE_TAG)
    if not base:
        raise ForkkitError(f"{tree_path}: no '{BASE_TAG}' tag; materialize first")
    if not git.is_clean():
        raise ForkkitError(
            f"{tree_path}: uncommitted changes; commit them (git commit -s) first"
        )
    if not git.ok("merge-base", "--is-ancestor", base, "HEAD"):
        raise ForkkitError(
            f"{tree_path}: HEAD is not on top of '{BASE_TAG}'; check out "
            f"'{FORK_BRANCH}' (or rebase onto '{BASE_TAG}') first"
        )
    merges = git.out("rev-list", "--merges", f"{base}..HEAD")
    if merges:
        raise ForkkitError(
            f"{tree_path}: merge commit {merges.split()[0][:12]} in {BASE_TAG}..HEAD; "
            "a patch series must be linear (git rebase -i base)"
        )
    head_tree = git.out("rev-parse", "HEAD^{tree}")
    with tempfile.TemporaryDirectory(prefix="forkkit-export-") as tmp_name:
        tmp = Path(tmp_name)
        git.run(
            "format-patch",
            "-q",
            "--zero-commit",
            "--no-signature",
            "-N",
            "-o",
            str(tmp),
            f"{BASE_TAG}..HEAD",
        )
        files = sorted(tmp.glob("*.patch"))
        if _series_tree(git, base, files) != head_tree:
            raise ForkkitError(
                f"{tree_path}: the exported patches do not reproduce HEAD's tree; "
                "nothing written (binary or mode-only changes?)"
            )
        names = [f.name for f in files]
        old = parse_series_file(series_file.read_text()) if series_file.exists() else []
        patches_dir.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copyfile(f, patches_dir / f.name)
    for name in old:
        if name not in names:
            (patches_dir / name).unlink(missing_ok=True)
    series_file.write_text("".join(f"{n}\n" for n in names))
    _rebuild_after_export(git, base, series_file, patches_dir, head_tree)
    return names


def _rebuild_after_export(
    git: Git, base: str, series_file: Path, patches_dir: Path, head_tree: str
) -> None:
    """Re-apply the written series so the fork tree matches a fresh materialize."""
    state = _read_state(git)
    if state is None:
        return
    series = load_series(series_file, patches_dir)
    user_head = git.out("rev-parse", "HEAD")
    git.run("checkout", "-q", "-B", FORK_BRANCH, base)
    try:
        commits = apply_series(git, series, str(state.get("upstream_label", "base")))
    except ForkkitError:
        git.run("am", "--abort", check=False)
        git.run("checkout", "-q", "-f", "-B", FORK_BRANCH, user_head)
        raise
    if git.out("rev-parse", "HEAD^{tree}") != head_tree:
        git.run("checkout", "-q", "-f", "-B", FORK_BRANCH, user_head)
        raise ForkkitError(
            f"{git.cwd}: the re-applied series differs from your commits; they are "
            f"kept at {user_head[:12]}, inspect with git diff"
        )
    state.update(
        head=git.out("rev-parse", "HEAD"),
        series_digest=series.digest,
        patch_commits=commits,
    )
    _write_state(git, state)
