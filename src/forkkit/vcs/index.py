# SPDX-License-Identifier: Apache-2.0
"""A scratch index: build a tree without touching the repository's index."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forkkit.vcs.apply import ApplyResult, apply_result
from forkkit.vcs.git import Git


class ScratchIndex:
    """A private index file; every method works on it alone."""

    def __init__(self, git: Git, path: Path) -> None:
        self._git = git
        self.path = path
        self._env = {"GIT_INDEX_FILE": str(path)}

    def read_tree(self, rev: str) -> None:
        """Load ``rev``'s tree."""
        self._git.run("read-tree", extra_env=self._env, operands=[rev])

    def add_directory(
        self, src: Path, *, exclude: tuple[str, ...] = (), force: bool = True
    ) -> None:
        """Stage every file under ``src`` (ignore rules apply only when not
        ``force``)."""
        tree = ["--work-tree", str(src)]
        add = ["add", "-A", *(["--force"] if force else []), "."]
        self._git.run(*tree, *add, extra_env=self._env)
        if exclude:
            self._git.run(
                *tree,
                "rm",
                "-q",
                "--cached",
                "--ignore-unmatch",
                "--",
                *exclude,
                extra_env=self._env,
            )

    def set_entry(self, path: str, blob: str | None, mode: str = "100644") -> None:
        """Point ``path`` at ``blob``, or remove it when ``blob`` is None."""
        if blob is None:
            args = ["update-index", "--force-remove", "--", path]
        else:
            args = ["update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}"]
        self._git.run(*args, extra_env=self._env)

    def apply(
        self,
        patch: Path | str,
        *,
        reverse: bool = False,
        check: bool = False,
        three_way: bool = False,
        strip: int = 1,
    ) -> ApplyResult:
        """Apply a patch (a file or its text) to the index only (``check``:
        only say whether it would apply; ``three_way``: merge with the
        preimage blobs where the context moved; ``strip``: leading path
        components to drop, ``-p``)."""
        args = ["apply", "--cached", f"-p{strip}", *(["-R"] if reverse else [])]
        args += ["--check"] if check else []
        args += ["--3way"] if three_way else []
        if isinstance(patch, Path):
            proc = self._git.run(*args, str(patch), check=False, extra_env=self._env)
        else:
            proc = self._git.run(*args, input=patch, check=False, extra_env=self._env)
        if proc.returncode == 0:
            return ApplyResult(ok=True)
        return apply_result(proc.stderr + proc.stdout)

    def entries(self, paths: tuple[str, ...] = ()) -> dict[str, str]:
        """``path -> blob id`` of the staged files (under ``paths``)."""
        out = self._git.run("ls-files", "-s", "--", *paths, extra_env=self._env)
        entries = {}
        for line in out.stdout.splitlines():
            meta, path = line.split("\t", 1)
            entries[path] = meta.split()[1]
        return entries

    def write_tree(self) -> str:
        """Write the index as a tree object; return its id."""
        return self._git.run("write-tree", extra_env=self._env).stdout.strip()


@contextmanager
def scratch_index(git: Git, git_dir: Path, name: str) -> Iterator[ScratchIndex]:
    """A fresh index file in ``git_dir``, deleted however the block ends."""
    path = git_dir / f"forkkit-{name}-{os.getpid()}.idx"
    path.unlink(missing_ok=True)
    try:
        yield ScratchIndex(git, path)
    finally:
        path.unlink(missing_ok=True)
        Path(f"{path}.lock").unlink(missing_ok=True)
