# SPDX-License-Identifier: Apache-2.0
"""The work tree and index of a repository: checkouts that discard edits
(named so), patches applied as commits, conflicts, scratch indexes and
scratch worktrees (a part of :class:`~forkkit.vcs.repo.Repo`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Self

from forkkit.vcs.apply import ApplyResult, apply_result
from forkkit.vcs.git import GitBound, operand
from forkkit.vcs.index import ScratchIndex, scratch_index


class WorkTree(GitBound):
    """What changes the checked-out files or the index."""

    def git_dir(self) -> Path:
        """The absolute ``.git`` folder (per worktree)."""
        return Path(self._git.absolute_git_dir())

    def dirty(self) -> list[str]:
        """Modified, staged or untracked (not ignored) paths, sorted; a file
        flagged skip-worktree or assume-unchanged counts when it differs
        from the index (git status does not look at such files)."""
        # --no-renames: a rename is "R  new\0old", whose old path has no prefix
        args = ["status", "--porcelain", "-z", "--untracked-files=all", "--no-renames"]
        out = self._git.run(*args)
        paths = [e[3:] for e in out.stdout.split("\0") if len(e) > 3]
        return sorted({*paths, *self.hidden_changes()})

    def worktree_blob(self, path: str) -> str | None:
        """The blob id of ``path``'s content in the work tree (None: absent)."""
        if not (self.path / path).is_file():
            return None
        return self._git.out("hash-object", "--", path) or None

    def hidden_changes(self) -> list[str]:
        """Files flagged ``skip-worktree`` or ``assume-unchanged`` whose work
        tree content (or absence) differs from the index, sorted."""
        listed = self._git.run("ls-files", "-v", "-z").stdout.split("\0")
        # "S path": skip-worktree; a lower-case tag ("h path"): assume-unchanged
        flagged = [
            e[2:] for e in listed if len(e) > 2 and (e[0] == "S" or e[0].islower())
        ]
        if not flagged:
            return []
        staged = self._git.run("ls-files", "-s", "-z", "--", *flagged).stdout
        blobs = {}
        for entry in staged.split("\0"):
            if entry:
                meta, path = entry.split("\t", 1)
                blobs[path] = meta.split()[1]
        present = [p for p in flagged if (self.path / p).is_file()]
        hashed = (
            self._git.run(
                "hash-object", "--stdin-paths", input="\n".join(present) + "\n"
            ).stdout.split()
            if present
            else []
        )
        now = dict(zip(present, hashed, strict=True))
        return sorted(p for p in flagged if now.get(p) != blobs.get(p))

    def ignored(self) -> list[str]:
        """Untracked files the ignore rules hide from :meth:`dirty`, sorted."""
        args = ["ls-files", "-z", "--others", "--ignored", "--exclude-standard"]
        out = self._git.run(*args).stdout
        return sorted(p for p in out.split("\0") if p)

    def is_clean(self, *, untracked: bool = True) -> bool:
        """No local edits (and, with ``untracked``, no untracked files)."""
        if untracked:
            return not self.dirty()
        return self._git.is_clean() and not self.hidden_changes()

    def fast_forward(self, rev: str) -> None:
        """Move the checked-out branch forward to ``rev`` (a descendant of
        HEAD), updating the work tree; git refuses to overwrite any file."""
        self._git.run("merge", "--ff-only", "-q", operands=[rev])

    def force_checkout(self, *, branch: str, rev: str) -> None:
        """Point ``branch`` at ``rev`` and check it out, discarding edits."""
        self._git.run("checkout", "-q", "-f", "-B", operand(branch), operand(rev))
        self._git.run("clean", "-q", "-fd")

    def detach(self, rev: str) -> None:
        """Check out ``rev`` detached, discarding edits and untracked files."""
        self._git.run("checkout", "-q", "-f", "--detach", operand(rev))
        self._git.run("clean", "-qfdx")

    def reset_hard(self, rev: str = "HEAD") -> None:
        """``reset --hard`` to ``rev``."""
        self._git.run("reset", "-q", "--hard", operand(rev))

    def abort_operations(self) -> None:
        """Abort any half-done ``am``, ``cherry-pick`` or merge."""
        for args in (("am", "--abort"), ("cherry-pick", "--abort")):
            self._git.run(*args, check=False)
        self._git.run("merge", "--abort", check=False)

    def read_tree_into_worktree(self, rev: str) -> None:
        """Make the index and the files ``rev``'s tree (conflicts included)."""
        self._git.run("read-tree", "--reset", "-u", operands=[rev])

    def tree_with(self, base: str, diff: str) -> tuple[str | None, list[ApplyResult]]:
        """The tree a plain ``diff`` gives on ``base`` (``-p1``, else ``-p0``);
        None and each reading's failure when it applies neither way."""
        tried: list[ApplyResult] = []
        with self.scratch_index("plain-diff") as index:
            index.read_tree(base)
            for strip in (1, 0):
                result = index.apply(diff, check=True, strip=strip)
                if result.ok:
                    index.apply(diff, strip=strip)
                    return index.write_tree(), []
                tried.append(result)
        return None, tried

    def take(self, rev: str, paths: Sequence[str]) -> None:
        """Each of ``paths`` in the index and the work tree as ``rev`` has it
        (removed where it has none): a conflict resolved by one side."""
        listed = self._git.out(
            "ls-tree", "-r", "--name-only", "-z", operand(rev), "--", *paths
        )
        have = set(listed.split("\0"))
        present = [p for p in paths if p in have]
        if present:
            self._git.run("checkout", operand(rev), "--", *present)
        gone = [p for p in paths if p not in have]
        if gone:
            self._git.run("rm", "-q", "--ignore-unmatch", "--", *gone)

    def unmerged(self) -> list[str]:
        """Paths with unresolved conflicts."""
        out = self._git.out("diff", "--name-only", "--diff-filter=U")
        return out.splitlines()

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

    @contextmanager
    def scratch_index(self, name: str = "scratch") -> Iterator[ScratchIndex]:
        """A private index file, removed however the block ends."""
        with scratch_index(self._git, self.git_dir(), name) as index:
            yield index

    def prune_stale_worktrees(self) -> list[Path]:
        """Remove the scratch worktrees a killed forkkit left (dead pid)."""
        from forkkit.vcs.worktree import prune_stale

        return prune_stale(self._git)

    @contextmanager
    def worktree(self, rev: str, tag: str) -> Iterator[Self]:
        """A detached scratch worktree of ``rev`` (the same kind of object),
        removed on exit."""
        from forkkit.vcs.worktree import scratch_worktree

        with scratch_worktree(self._git, rev, tag) as wt:
            yield type(self)(wt.cwd)
