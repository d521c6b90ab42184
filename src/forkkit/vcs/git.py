"""The git process wrapper: the only place a git process is started.

Only modules inside ``forkkit.vcs`` import this; everything else goes
through :class:`forkkit.vcs.Repo`.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from forkkit import faults
from forkkit.errors import ForkkitError

# A fixed identity and clock make the materialized commits reproducible:
# the same upstream and patches give the same SHAs on every machine.
BOT_NAME = "vllm-fork-kit"
BOT_EMAIL = "fork-kit@users.noreply.github.com"
FIXED_DATE = "2000-01-01T00:00:00+0000"

# git subcommands that only read: every other one is a write point (faults)
_READS = frozenset(
    {"rev-parse", "cat-file", "log", "diff", "ls-tree", "ls-files", "status"}
    | {"for-each-ref", "merge-base", "symbolic-ref", "rev-list", "patch-id"}
    | {"show", "range-diff", "check-attr", "--version", "version", "var", "grep"}
)


# git's message for a lock file left in place: "Unable to create 'P.lock': File exists."
_LOCKED = re.compile(r"Unable to create '([^']+\.lock)': File exists")


# Every git forkkit runs: no line-ending rewrites, no advice, and the
# housekeeping a command triggers (gc --auto, maintenance) done before it
# returns, never left running behind it (it would keep a core busy while
# --parallel auto samples the machine). The user's own configuration cannot
# change what forkkit writes or reads back: its commits are never signed and
# run no hooks, its patches get no sign-off, cover letter, other suffix or
# prefixes, and the output it parses has no colours or signatures.
_CONFIG = tuple(
    arg
    for pair in (
        "core.autocrlf=false",
        "advice.detachedHead=false",
        "gc.autoDetach=false",
        "maintenance.autoDetach=false",
        "commit.gpgSign=false",
        "tag.gpgSign=false",
        "core.hooksPath=/dev/null",
        "format.signOff=false",
        "format.coverLetter=false",
        "format.suffix=.patch",
        "format.numbered=auto",
        "format.filenameMaxLength=64",
        "diff.noprefix=false",
        "diff.mnemonicPrefix=false",
        "diff.relative=false",
        "color.ui=false",
        "log.showSignature=false",
        "apply.whitespace=nowarn",
        "core.quotePath=true",
        # Only the transports forkkit supports: never ext::, fd:: or another
        # remote helper that runs a program named in a URL.
        "protocol.allow=never",
        "protocol.file.allow=always",
        "protocol.https.allow=always",
        "protocol.ssh.allow=always",
        "protocol.git.allow=always",
    )
    for arg in ("-c", pair)
)


# Full object ids: a spec or revision that starts with one names the same
# object for as long as the repository exists.
_FULL_ID = re.compile(r"[0-9a-f]{40}([^0-9a-f]|$)")
_KEPT: dict[tuple[object, ...], object] = {}
T = TypeVar("T")


def folder_identity(cwd: Path) -> tuple[str, int, int, int] | None:
    """A repository folder's path and identity: device, inode, and the
    ctime, which moves when an entry such as ``.git`` is made or removed in
    it; None when the folder cannot be read."""
    try:
        st = os.stat(cwd)
    except OSError:
        return None
    return (str(cwd), st.st_dev, st.st_ino, st.st_ctime_ns)


def kept_for_the_process(
    cwd: Path,
    key: tuple[object, ...],
    make: Callable[[], T],
    *,
    keep: Callable[[T], bool] = lambda _: True,
) -> T:
    """``make()``'s answer for ``key`` in the repository at ``cwd``, made
    once per process (only an answer ``keep`` accepts is kept). Kept under
    the folder's identity, so a repository made anew in its place is asked
    again; where the folder cannot be read, nothing is kept."""
    found = folder_identity(cwd)
    if found is None:
        return make()
    full = (*found, *key)
    if full in _KEPT:
        return cast(T, _KEPT[full])
    made = make()
    if keep(made):
        _KEPT[full] = made
    return made


def operand(value: str, *, what: str = "git revision or URL") -> str:
    """``value`` when git can only read it as data (a revision, URL or
    refspec); one line otherwise. A value starting with ``-`` would be an
    option to git (``--upload-pack=CMD`` runs CMD), so it is refused before
    any git runs, wherever it came from."""
    if not value or value.startswith("-") or any(c in value for c in "\0\n\r"):
        raise ForkkitError(
            f"{what} {value!r}: not a revision or URL (it is empty, starts with "
            "'-' or holds a line break, so git would read it as an option); fix it"
        )
    return value


class GitError(ForkkitError):
    """A git command failed; carries its stderr."""

    def __init__(self, args: list[str], returncode: int, stderr: str) -> None:
        self.args_ = args
        self.returncode = returncode
        self.stderr = stderr
        last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
        lock = _LOCKED.search(stderr)
        if lock:
            last = (
                f"{lock.group(1)} exists: a git process holds it, or one was "
                "killed; if no git runs in that repository, delete it and rerun"
            )
        super().__init__(f"git {' '.join(args[:3])} failed ({returncode}): {last}")


@dataclass(frozen=True)
class Git:
    """Run git in one repository (or worktree)."""

    cwd: Path

    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("GIT_") or k == "GIT_TRACE"
        }
        env.update(
            GIT_AUTHOR_NAME=BOT_NAME,
            GIT_AUTHOR_EMAIL=BOT_EMAIL,
            GIT_COMMITTER_NAME=BOT_NAME,
            GIT_COMMITTER_EMAIL=BOT_EMAIL,
            GIT_AUTHOR_DATE=FIXED_DATE,
            GIT_COMMITTER_DATE=FIXED_DATE,
            GIT_CONFIG_NOSYSTEM="1",
            GIT_TERMINAL_PROMPT="0",
            LC_ALL="C",
        )
        return env

    def run(
        self,
        *args: str,
        check: bool = True,
        input: str | bytes | None = None,
        extra_env: dict[str, str] | None = None,
        operands: Sequence[str] = (),
        paths: Sequence[str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``git ARGS [--end-of-options OPERANDS] [-- PATHS]``; raise
        :class:`GitError` on failure when ``check``.

        ``ARGS`` are forkkit's own words. Every value that may come from
        outside (a revision, URL or refspec from fork.toml, the command line
        or a report) goes in ``operands``: git reads what follows
        ``--end-of-options`` as data only, and each is checked by
        :func:`operand` first. This is the one place argv is built."""
        if args and args[0] not in _READS:
            faults.point(f"git {args[0]}")
        env = self.env()
        if extra_env:
            env.update(extra_env)
        tail = [operand(v) for v in operands]
        cmd = ["git", *_CONFIG, *args]
        if tail:
            cmd += ["--end-of-options", *tail]
        if paths is not None:
            # after --end-of-options ls-tree reads "--" as a path (git 2.39)
            cmd += [*([] if tail and args[:1] == ("ls-tree",) else ["--"]), *paths]
        try:
            raw = subprocess.run(
                cmd,
                cwd=self.cwd,
                env=env,
                input=input.encode() if isinstance(input, str) else input,
                capture_output=True,
            )
        except OSError as exc:  # no git on PATH, or the folder is gone
            raise ForkkitError(
                f"{self.cwd}: cannot run git ({exc.strerror or exc}); "
                "install git and check the folder exists"
            ) from None
        # decoded as they are: a file's own CRLF lines stay CRLF (text mode
        # would turn them into LF, and a diff of them would not apply)
        proc = subprocess.CompletedProcess(
            raw.args,
            raw.returncode,
            raw.stdout.decode(),
            raw.stderr.decode(errors="replace"),
        )
        if check and proc.returncode != 0:
            raise GitError(list(args), proc.returncode, proc.stderr or proc.stdout)
        return proc

    def out(self, *args: str, operands: Sequence[str] = ()) -> str:
        """stdout of ``git ARGS [--end-of-options OPERANDS]``, stripped."""
        return self.run(*args, operands=operands).stdout.strip()

    def ok(self, *args: str, operands: Sequence[str] = ()) -> bool:
        """Whether ``git ARGS [--end-of-options OPERANDS]`` succeeds."""
        return self.run(*args, check=False, operands=operands).returncode == 0

    def rev(self, ref: str) -> str | None:
        """The commit a ref names, or None."""
        return self.lookup(f"{ref}^{{commit}}")

    def lookup(self, spec: str) -> str | None:
        """The object ``spec`` names (``rev-parse --verify``), or None. One
        that starts with a full object id names the same object for as long
        as the repository exists, so a found answer is kept for the process
        (keyed by the folder's identity: a repository made anew in its place
        is asked again). A lookup that finds nothing is always asked again."""

        def ask() -> str | None:
            proc = self.run("rev-parse", "--verify", "-q", check=False, operands=[spec])
            return proc.stdout.strip() or None

        if not _FULL_ID.match(spec):
            return ask()
        return kept_for_the_process(
            self.cwd, ("lookup", spec), ask, keep=lambda v: v is not None
        )

    def is_clean(self) -> bool:
        return self.out("status", "--porcelain", "--untracked-files=no") == ""

    def kept_out(
        self, *args: str, revs: Sequence[str], paths: Sequence[str] | None = None
    ) -> str:
        """stdout of ``git ARGS --end-of-options REVS [-- PATHS]`` (a read),
        kept for the process when every one of ``revs`` starts with a full
        object id: its answer cannot change while the repository exists."""

        def ask() -> str:
            return self.run(*args, operands=revs, paths=paths).stdout

        if not all(_FULL_ID.match(r) for r in revs):
            return ask()
        key = (*args, "--end-of-options", *revs, "--", *(paths or ()))
        return kept_for_the_process(self.cwd, key, ask)

    def absolute_git_dir(self) -> str:
        """``rev-parse --absolute-git-dir``: the same while the folder's
        identity holds (its ``.git`` made anew changes it), so kept."""
        return kept_for_the_process(
            self.cwd,
            ("--absolute-git-dir",),
            lambda: self.out("rev-parse", "--absolute-git-dir"),
        )

    def blob(self, rev: str, path: str) -> str | None:
        """The blob SHA of ``path`` at ``rev`` (None if absent)."""
        return self.lookup(f"{rev}:{path}")

    @classmethod
    def init(cls, path: Path, *, bare: bool = False) -> Git:
        path.mkdir(parents=True, exist_ok=True)
        git = cls(path)
        git.run("init", "-q", *(["--bare"] if bare else []), "-b", "main")
        return git


class GitBound:
    """What every part of :class:`~forkkit.vcs.repo.Repo` stands on: the
    folder and the one git runner (private to ``vcs/``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._git = Git(path)
