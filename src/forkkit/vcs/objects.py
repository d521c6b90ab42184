# SPDX-License-Identifier: Apache-2.0
"""The object store of a repository: commits, trees and blobs read and
written, diffs between revisions (a part of :class:`~forkkit.vcs.repo.Repo`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forkkit.vcs.git import GitBound, operand


@dataclass(frozen=True)
class Identity:
    """Who a commit names, and when."""

    name: str
    email: str
    date: str


class Objects(GitBound):
    """Reading and writing git objects (no ref and no work tree moves)."""

    def rev(self, ref: str) -> str | None:
        """The commit ``ref`` names, or None."""
        return self._git.rev(ref)

    def object_id(self, ref: str) -> str | None:
        """The object ``ref`` names (any type), or None."""
        return self._git.lookup(ref)

    def tree(self, rev: str) -> str:
        """The tree id of ``rev``."""
        found = self._git.lookup(f"{rev}^{{tree}}")
        if found is None:
            self._git.run(
                "rev-parse", operands=[f"{rev}^{{tree}}"]
            )  # its error, as before
        return found or ""

    def blob(self, rev: str, path: str) -> str | None:
        """The blob id of ``path`` at ``rev`` (None if absent)."""
        return self._git.blob(rev, path)

    def read_blob(self, obj: str) -> bytes:
        """The bytes of a blob (by id or ``rev:path``)."""
        out = self._git.run("cat-file", "blob", operands=[obj]).stdout
        return out.encode()

    def write_blob(self, data: str) -> str:
        """Store ``data`` as a blob; return its id."""
        return self._git.run("hash-object", "-w", "--stdin", input=data).stdout.strip()

    def message(self, rev: str) -> str:
        """The full commit message of ``rev``."""
        return self._git.out("log", "-1", "--format=%B", operands=[rev])

    def author(self, rev: str) -> Identity:
        """The author of ``rev``."""
        name, email, date = self._git.out(
            "log", "-1", "--format=%an%n%ae%n%aI", operands=[rev]
        ).splitlines()
        return Identity(name=name, email=email, date=date)

    def subjects(self, rev_range: str) -> list[str]:
        """``short-sha subject`` of each commit in ``rev_range``, oldest first."""
        out = self._git.out("log", "--reverse", "--format=%h %s", operands=[rev_range])
        return out.splitlines()

    def commits(
        self, rev_range: str, *, merges_only: bool = False, first_parent: bool = False
    ) -> list[str]:
        """The commits in ``rev_range``, oldest first (``first_parent``: on the
        mainline only, as a bisection walks it)."""
        flags = ["--merges"] if merges_only else []
        flags += ["--first-parent"] if first_parent else []
        return self._git.out(
            "rev-list", "--reverse", *flags, operands=[rev_range]
        ).split()

    def committers(self, rev_range: str) -> list[tuple[str, str]]:
        """``(commit, committer e-mail)`` of each commit in ``rev_range``,
        oldest first."""
        out = self._git.out("log", "--reverse", "--format=%H %ce", operands=[rev_range])
        return [(line[:40], line[41:]) for line in out.splitlines() if line]

    def committer_emails(self, rev: str) -> list[str]:
        """The committer e-mail of every commit reachable from ``rev``."""
        return self._git.out("log", "--format=%ce", operands=[rev]).splitlines()

    def is_ancestor(self, ancestor: str, rev: str) -> bool:
        """Whether ``ancestor`` is ``rev`` or one of its ancestors."""
        return self._git.ok("merge-base", "--is-ancestor", operands=[ancestor, rev])

    def ls_tree(self, rev: str, paths: Sequence[str]) -> dict[str, str]:
        """``path -> blob id`` of the files under ``paths`` at ``rev``."""
        return {path: oid for path, (_, oid) in self.ls_tree_modes(rev, paths).items()}

    def ls_tree_modes(
        self, rev: str, paths: Sequence[str]
    ) -> dict[str, tuple[str, str]]:
        """``path -> (mode, object id)`` of the entries under ``paths`` at
        ``rev``, names as they are (``-z``: no quoting); mode 120000 is a
        symlink, 160000 a submodule."""
        out = self._git.kept_out("ls-tree", "-r", "-z", revs=[rev], paths=paths)
        entries = {}
        for record in out.split("\0"):
            if record:
                meta, path = record.split("\t", 1)
                mode, _, oid = meta.split()
                entries[path] = (mode, oid)
        return entries

    def sizes(self, rev: str, paths: Sequence[str]) -> dict[str, int]:
        """``path -> size in bytes`` of the files under ``paths`` at ``rev``."""
        out = self._git.kept_out("ls-tree", "-r", "-l", "-z", revs=[rev], paths=paths)
        found = {}
        for record in out.split("\0"):
            if record:
                meta, path = record.split("\t", 1)
                size = meta.split()[-1]
                found[path] = int(size) if size.isdigit() else 0
        return found

    def changed_paths(self, a: str, b: str) -> list[str]:
        """Paths that differ between two revisions."""
        out = self._git.kept_out("diff", "--name-only", revs=[a, b])
        return out.strip().splitlines()

    def diff(
        self,
        *,
        a: str,
        b: str | None = None,
        paths: Sequence[str] = (),
        renames: bool = True,
    ) -> str:
        """A full-index unified diff from ``a`` to ``b`` (the work tree if
        None); ``renames=False``: a moved file is a deletion and an addition."""
        revs = [a] if b is None else [a, b]
        args = ["diff", "--no-color", "--full-index", "--binary"]
        args += [] if renames else ["--no-renames"]
        return self._git.run(*args, operands=revs, paths=paths).stdout

    def renamed_paths(self, a: str, b: str) -> dict[str, str]:
        """``old path -> new path`` of each file git's rename detection finds
        moved from ``a`` to ``b``."""
        out = self._git.kept_out(
            "diff", "-M", "--name-status", "--diff-filter=R", "-z", revs=[a, b]
        )
        fields = out.split("\0")
        return {
            fields[i + 1]: fields[i + 2]
            for i in range(0, len(fields) - 2, 3)
            if fields[i].startswith("R")
        }

    def files_changed(self, a: str, b: str) -> list[str]:
        """Every path that differs between two trees, a moved file's both."""
        out = self._git.kept_out("diff", "--no-renames", "--name-only", revs=[a, b])
        return out.strip().splitlines()

    def grep_files(
        self, rev: str, patterns: Sequence[str], paths: Sequence[str]
    ) -> list[str]:
        """The files under ``paths`` at ``rev`` with a line matching one of the
        extended regular expressions ``patterns`` (``git grep -l -E``)."""
        if not patterns:
            return []
        args = ["grep", "-l", "-I", "-E", *(a for p in patterns for a in ("-e", p))]
        proc = self._git.run(*args, operand(rev), "--", *paths, check=False)
        prefix = f"{rev}:"
        return sorted(
            line.removeprefix(prefix) for line in proc.stdout.splitlines() if line
        )

    def patch_id(self, diff: str) -> str:
        """``git patch-id --stable`` of a diff ("" for an empty diff)."""
        out = self._git.run("patch-id", "--stable", input=diff).stdout.split()
        return out[0] if out else ""

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
