# SPDX-License-Identifier: Apache-2.0
"""``Repo``: the typed git operations the rest of forkkit may use.

Every method is one git concept (a ref, a tree, a checkout, a patch); none
of them exposes the git command line. Operations that rewrite a work tree
say so in their names (``force_checkout``, ``reset_hard``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from forkkit.vcs.apply import ApplyResult, apply_result
from forkkit.vcs.git import Git, GitError
from forkkit.vcs.index import ScratchIndex, scratch_index

ZERO = "0" * 40


@dataclass(frozen=True)
class RefUpdate:
    """Set ``ref`` to ``new`` (delete when empty) iff it now holds ``old``.

    ``old`` None: no expectation; ``old`` ``ZERO``: the ref must not exist.
    """

    ref: str
    new: str
    old: str | None = None


@dataclass(frozen=True)
class Identity:
    """Who a commit names, and when."""

    name: str
    email: str
    date: str


class Repo:
    """One git repository (or worktree) on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._git = Git(path)

    def __repr__(self) -> str:
        return f"Repo({str(self.path)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Repo) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    # -- creation and identity -------------------------------------------
    @classmethod
    def init(cls, path: Path, *, bare: bool = False) -> Repo:
        """Create an empty repository (branch ``main``) at ``path``."""
        Git.init(path, bare=bare)
        return cls(path)

    @staticmethod
    def is_repo_root(path: Path) -> bool:
        """Whether ``path`` is the top of a work tree (a ``.git`` entry)."""
        return (path / ".git").exists()

    def git_dir(self) -> Path:
        """The absolute ``.git`` folder (per worktree)."""
        return Path(self._git.out("rev-parse", "--absolute-git-dir"))

    # -- reading ----------------------------------------------------------
    def rev(self, ref: str) -> str | None:
        """The commit ``ref`` names, or None."""
        return self._git.rev(ref)

    def object_id(self, ref: str) -> str | None:
        """The object ``ref`` names (any type), or None."""
        proc = self._git.run("rev-parse", "--verify", "-q", ref, check=False)
        return proc.stdout.strip() or None

    def tree(self, rev: str) -> str:
        """The tree id of ``rev``."""
        return self._git.out("rev-parse", f"{rev}^{{tree}}")

    def blob(self, rev: str, path: str) -> str | None:
        """The blob id of ``path`` at ``rev`` (None if absent)."""
        return self._git.blob(rev, path)

    def read_blob(self, obj: str) -> bytes:
        """The bytes of a blob (by id or ``rev:path``)."""
        out = self._git.run("cat-file", "blob", obj).stdout
        return out.encode()

    def write_blob(self, data: str) -> str:
        """Store ``data`` as a blob; return its id."""
        return self._git.run("hash-object", "-w", "--stdin", input=data).stdout.strip()

    def message(self, rev: str) -> str:
        """The full commit message of ``rev``."""
        return self._git.out("log", "-1", "--format=%B", rev)

    def author(self, rev: str) -> Identity:
        """The author of ``rev``."""
        name, email, date = self._git.out(
            "log", "-1", "--format=%an%n%ae%n%aI", rev
        ).splitlines()
        return Identity(name=name, email=email, date=date)

    def subjects(self, rev_range: str) -> list[str]:
        """``short-sha subject`` of each commit in ``rev_range``, oldest first."""
        out = self._git.out("log", "--reverse", "--format=%h %s", rev_range)
        return out.splitlines()

    def commits(self, rev_range: str, *, merges_only: bool = False) -> list[str]:
        """The commits in ``rev_range``, oldest first."""
        flags = ["--merges"] if merges_only else []
        return self._git.out("rev-list", "--reverse", *flags, rev_range).split()

    def committer_emails(self, rev: str) -> list[str]:
        """The committer e-mail of every commit reachable from ``rev``."""
        return self._git.out("log", "--format=%ce", rev).splitlines()

    def is_ancestor(self, ancestor: str, rev: str) -> bool:
        """Whether ``ancestor`` is ``rev`` or one of its ancestors."""
        return self._git.ok("merge-base", "--is-ancestor", ancestor, rev)

    def branch(self) -> str | None:
        """The checked-out branch, or None when HEAD is detached."""
        proc = self._git.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
        return proc.stdout.strip() or None

    def ls_tree(self, rev: str, paths: Sequence[str]) -> dict[str, str]:
        """``path -> blob id`` of the files under ``paths`` at ``rev``."""
        out = self._git.out("ls-tree", "-r", rev, "--", *paths)
        entries = {}
        for line in out.splitlines():
            meta, path = line.split("\t", 1)
            entries[path] = meta.split()[2]
        return entries

    def changed_paths(self, a: str, b: str) -> list[str]:
        """Paths that differ between two revisions."""
        return self._git.out("diff", "--name-only", a, b).splitlines()

    def diff(self, *, a: str, b: str | None = None, paths: Sequence[str] = ()) -> str:
        """A full-index unified diff from ``a`` to ``b`` (the work tree if None)."""
        revs = [a] if b is None else [a, b]
        args = ["diff", "--no-color", "--full-index", "--binary", *revs]
        return self._git.run(*args, "--", *paths).stdout

    def patch_id(self, diff: str) -> str:
        """``git patch-id --stable`` of a diff ("" for an empty diff)."""
        out = self._git.run("patch-id", "--stable", input=diff).stdout.split()
        return out[0] if out else ""

    # -- the work tree ----------------------------------------------------
    def dirty(self) -> list[str]:
        """Modified, staged or untracked (not ignored) paths, sorted."""
        # --no-renames: a rename is "R  new\0old", whose old path has no prefix
        args = ["status", "--porcelain", "-z", "--untracked-files=all", "--no-renames"]
        out = self._git.run(*args)
        paths = [e[3:] for e in out.stdout.split("\0") if len(e) > 3]
        return sorted(set(paths))

    def is_clean(self, *, untracked: bool = True) -> bool:
        """No local edits (and, with ``untracked``, no untracked files)."""
        if untracked:
            return not self.dirty()
        return self._git.is_clean()

    def force_checkout(self, *, branch: str, rev: str) -> None:
        """Point ``branch`` at ``rev`` and check it out, discarding edits."""
        self._git.run("checkout", "-q", "-f", "-B", branch, rev)
        self._git.run("clean", "-q", "-fd")

    def detach(self, rev: str) -> None:
        """Check out ``rev`` detached, discarding edits and untracked files."""
        self._git.run("checkout", "-q", "-f", "--detach", rev)
        self._git.run("clean", "-qfdx")

    def reset_hard(self, rev: str = "HEAD") -> None:
        """``reset --hard`` to ``rev``."""
        self._git.run("reset", "-q", "--hard", rev)

    def abort_operations(self) -> None:
        """Abort any half-done ``am``, ``cherry-pick`` or merge."""
        for args in (("am", "--abort"), ("cherry-pick", "--abort")):
            self._git.run(*args, check=False)
        self._git.run("merge", "--abort", check=False)

    def read_tree_into_worktree(self, rev: str) -> None:
        """Make the index and the files ``rev``'s tree (conflicts included)."""
        self._git.run("read-tree", "--reset", "-u", rev)

    def unmerged(self) -> list[str]:
        """Paths with unresolved conflicts."""
        out = self._git.out("diff", "--name-only", "--diff-filter=U")
        return out.splitlines()

    def refs(self, prefix: str) -> dict[str, str]:
        """``ref -> object id`` of the refs under ``prefix``."""
        out = self._git.out("for-each-ref", "--format=%(refname) %(objectname)", prefix)
        return dict(line.split(" ", 1) for line in out.splitlines() if line)

    def conflict_stages(self) -> dict[str, set[int]]:
        """Per unmerged path, its index stages (1 base, 2 ours, 3 theirs)."""
        stages: dict[str, set[int]] = {}
        for line in self._git.out("ls-files", "-u", "-z").split("\0"):
            if "\t" in line:
                meta, path = line.split("\t", 1)
                stages.setdefault(path, set()).add(int(meta.split()[2]))
        return stages

    def nothing_staged(self) -> bool:
        """Whether the index equals HEAD."""
        return self._git.ok("diff", "--cached", "--quiet")

    # -- writing objects and refs ----------------------------------------
    def commit_tree(
        self,
        *,
        tree: str,
        message: str,
        parents: Sequence[str] = (),
        author: Identity | None = None,
    ) -> str:
        """A new commit object (no ref moves)."""
        args = ["commit-tree", tree]
        for parent in parents:
            args += ["-p", parent]
        env = None
        if author:
            env = {
                "GIT_AUTHOR_NAME": author.name,
                "GIT_AUTHOR_EMAIL": author.email,
                "GIT_AUTHOR_DATE": author.date,
            }
        return self._git.run(*args, input=message, extra_env=env).stdout.strip()

    def update_refs(self, updates: Sequence[RefUpdate]) -> None:
        """Apply ``updates`` in one transaction: all of them or none.

        Raises :class:`GitError` when a ref does not hold its expected value.
        """
        lines = ["start"]
        for u in updates:
            old = "" if u.old is None else f" {u.old}"
            if u.new:
                lines.append(f"update {u.ref} {u.new}{old}")
            else:
                lines.append(f"delete {u.ref}{old}")
        lines += ["prepare", "commit", ""]
        self._git.run("update-ref", "--stdin", input="\n".join(lines))

    def tag(self, name: str, rev: str) -> None:
        """Point lightweight tag ``name`` at ``rev`` (moving it if present)."""
        self._git.run("tag", "-f", name, rev)

    def set_config(self, key: str, value: str) -> None:
        """Set a repository-local config value."""
        self._git.run("config", key, value)

    # -- patches ---------------------------------------------------------
    def am(self, patch: Path) -> ApplyResult:
        """Apply a mail-format patch as one commit; aborts cleanly on failure."""
        proc = self._git.run(
            "am",
            "-q",
            "--keep-cr",
            # keep "[Bugfix][Core] ..." subjects: strip only "[PATCH ...]"
            "--keep-non-patch",
            "--committer-date-is-author-date",
            str(patch),
            check=False,
        )
        if proc.returncode == 0:
            return ApplyResult(ok=True)
        result = self.check_patch(patch)
        self._git.run("am", "--abort", check=False)
        return result if not result.ok else apply_result(proc.stderr + proc.stdout)

    def check_patch(self, patch: Path | str, *, reverse: bool = False) -> ApplyResult:
        """Whether a patch (a file, or its text) applies to the work tree."""
        args = ["apply", "--check", "--verbose", *(["-R"] if reverse else [])]
        if isinstance(patch, Path):
            proc = self._git.run(*args, str(patch), check=False)
        else:
            proc = self._git.run(*args, input=patch, check=False)
        if proc.returncode == 0:
            return ApplyResult(ok=True)
        return apply_result(proc.stderr + proc.stdout)

    def format_patch(self, rev_range: str, out_dir: Path) -> list[Path]:
        """``format-patch`` each commit of ``rev_range`` into ``out_dir``."""
        self._git.run(
            "format-patch",
            "-q",
            "--zero-commit",
            "--no-signature",
            "-N",
            "-o",
            str(out_dir),
            rev_range,
        )
        return sorted(out_dir.glob("*.patch"))

    # -- scratch state ---------------------------------------------------
    @contextmanager
    def scratch_index(self, name: str = "scratch") -> Iterator[ScratchIndex]:
        """A private index file, removed however the block ends."""
        with scratch_index(self._git, self.git_dir(), name) as index:
            yield index

    @contextmanager
    def worktree(self, rev: str, tag: str) -> Iterator[Repo]:
        """A detached scratch worktree of ``rev``, removed on exit."""
        from forkkit.vcs.worktree import scratch_worktree

        with scratch_worktree(self._git, rev, tag) as wt:
            yield Repo(wt.cwd)


__all__ = ["ZERO", "GitError", "Identity", "RefUpdate", "Repo"]
