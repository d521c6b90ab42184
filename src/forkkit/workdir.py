# SPDX-License-Identifier: Apache-2.0
"""The workdir: every path forkkit writes under it, its lock, its run folders.

No other module builds a path under the workdir by hand. Writing commands
hold :meth:`Workdir.lock`; a run writes into a fresh folder under ``runs/``
that :meth:`ReportFolder.publish` moves into ``reports/`` only at the end, so
a report on disk is always one run's whole output.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from forkkit import faults
from forkkit.errors import ForkkitError
from forkkit.process import pid_alive

PROOF_STEM = "red_green"  # the red/green reports' folder and file stem

LOCK_FILE = ".lock"
HOLDER_FILE = ".lock-holder.json"


class WorkdirBusy(ForkkitError):
    """Another forkkit command holds the workdir's lock."""


@dataclass(frozen=True)
class Workdir:
    """The folder forkkit materializes into (``.forkkit`` by default). A
    named line (``[line] name``) keeps its own fork tree, run and report
    folders, rebase and reconcile repositories under ``lines/NAME/``; the
    sdist cache, upstreams, venvs, result cache and lock are shared."""

    root: Path
    line: str = ""  # "" : the default line, at the top of the workdir

    @property
    def _own(self) -> Path:
        """The line's own folder."""
        return self.root / "lines" / self.line if self.line else self.root

    # -- paths -----------------------------------------------------------
    @property
    def sdist_cache(self) -> Path:
        """Verified upstream sdists."""
        return self.root / "cache" / "sdist"

    def upstream(self, name: str, version: str) -> Path:
        """The extracted pristine sdist of ``name==version``."""
        return self.root / "upstream" / f"{name}-{version}"

    @property
    def fork(self) -> Path:
        """The line's fork tree."""
        return self._own / "fork"

    @property
    def venvs(self) -> Path:
        """Test venvs, one per env key."""
        return self.root / "venvs"

    @property
    def reports(self) -> Path:
        """Published reports, one folder per command."""
        return self._own / "reports"

    def report_dir(self, stem: str) -> Path:
        """The published report folder of one command (``reports/STEM``)."""
        return self.reports / stem

    def timings_file(self, name: str) -> Path:
        """One upstream's measured test-file times (``name``: its label)."""
        return self.root / "timings" / f"{re.sub(r'[^A-Za-z0-9.+-]+', '_', name)}.json"

    def proof_dir(self, fix_id: str, *, out: Path | None = None) -> Path:
        """Where one fix's red/green report is published: ``FOLDER/<fix-id>``,
        the folder ``reports/red_green`` or ``out`` (``--out``)."""
        return (out or self.report_dir(PROOF_STEM)) / fix_id

    def proof_report(self, fix_id: str, *, out: Path | None = None) -> Path:
        """One fix's ``red_green.json`` (see :meth:`proof_dir`)."""
        return self.proof_dir(fix_id, out=out) / f"{PROOF_STEM}.json"

    @property
    def runs(self) -> Path:
        """Run folders in progress."""
        return self._own / "runs"

    @property
    def rebase_repo(self) -> Path:
        """The rebase helper's own repository (rerere persists there)."""
        return self._own / "rebase" / "repo"

    def rebase_dir(self, name: str) -> Path:
        """A folder of the rebase helper: ``out`` (the refreshed series),
        ``fork`` (the tree it is proven on), ``cache`` (reused JUnit), ``runs``."""
        return self._own / "rebase" / name

    @property
    def reconcile_repo(self) -> Path:
        """The fork tree reconcile builds its combinations in."""
        return self._own / "reconcile" / "repo"

    @property
    def results(self) -> Path:
        """The test-result cache."""
        return self.root / "results"

    # -- checks ----------------------------------------------------------
    def ensure(self) -> Path:
        """Create the workdir; one-line error if it cannot be a folder."""
        return _ensure_folder(self.root)

    # -- the lock --------------------------------------------------------
    @contextmanager
    def lock(self, *, command: str, wait: bool = False) -> Iterator[None]:
        """Hold the workdir's write lock for the block.

        A second writer fails at once naming the holder, or waits (``wait``).
        The kernel drops the lock when the holder dies, even by kill -9.
        """
        self.ensure()
        try:
            fd = os.open(self.root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a folder in its place, say
            raise ForkkitError(
                f"{self.root / LOCK_FILE}: cannot open the workdir's lock file "
                f"({exc.strerror}); remove what is there"
            ) from None
        try:
            self._acquire(fd, wait=wait)
            _write_holder(self.root / HOLDER_FILE, command)
            yield
        finally:
            os.close(fd)  # releases the flock

    def _acquire(self, fd: int, *, wait: bool) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        holder = self.holder()
        if not wait:
            raise WorkdirBusy(
                f"{self.root}: in use by {holder}; wait for it to finish, "
                "or rerun with --wait"
            )
        from forkkit.output.progress import say

        say(f"waiting for {holder} to release {self.root} ...")
        fcntl.flock(fd, fcntl.LOCK_EX)

    def busy(self) -> str | None:
        """Who holds the write lock now ('pid N (command)'), or None; takes
        nothing and writes nothing (``status`` never locks)."""
        try:
            fd = os.open(self.root / LOCK_FILE, os.O_RDONLY)
        except OSError:
            return None  # no lock file: nobody ever held it here
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return self.holder()
        finally:
            os.close(fd)  # drops the probe's shared lock, if it got one
        return None

    def holder(self) -> str:
        """Who holds the lock, as 'pid N (command)'."""
        try:
            data = json.loads((self.root / HOLDER_FILE).read_text())
            return f"pid {data['pid']} ({data['command']})"
        except (OSError, ValueError, KeyError, TypeError):
            return "another forkkit process"

    # -- run folders -----------------------------------------------------
    def _fresh_run_dir(self, stem: str) -> Path:
        """A new folder ``runs/STEM-PID-*`` (a dead run's are pruned first)."""
        self.ensure()
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
            _prune_dead_runs(self.runs, f"{stem}-")
            path = Path(
                tempfile.mkdtemp(prefix=f"{stem}-{os.getpid()}-", dir=self.runs)
            )
        except OSError as exc:
            raise ForkkitError(
                f"{self.runs}: cannot create a run folder ({exc.strerror or exc}); "
                "check the workdir's permissions or set FORKKIT_WORKDIR"
            ) from None
        return path

    @contextmanager
    def scratch_folder(self, stem: str) -> Iterator[Path]:
        """A fresh folder under ``runs/`` for output nobody publishes,
        removed however the block ends (a killed run's, by the next one)."""
        path = self._fresh_run_dir(stem)
        try:
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)

    @contextmanager
    def report_folder(
        self, stem: str, *, out: Path | None = None
    ) -> Iterator[ReportFolder]:
        """The one place that decides where a command's report goes: a fresh
        run folder, published as ``reports/STEM`` (or as ``out``, ``--out``).

        Whatever ends the block, the folder replaces the previous report:
        a failed or interrupted run leaves ``FAILED.txt`` saying why, never
        the previous run's report looking current.
        """
        if out is not None:
            with _folder_at(out, stem) as run:
                yield run
            return
        path, dest = self._fresh_run_dir(stem), self.report_dir(stem)
        _retire(dest, path)
        with publishing(ReportFolder(path=path, dest=dest)) as run:
            yield run

    def report_dest(self, stem: str, *, out: Path | None = None) -> Path:
        """Where :meth:`report_folder` publishes."""
        return self.report_dir(stem) if out is None else out


def _ensure_folder(root: Path) -> Path:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ForkkitError(
            f"{root}: the workdir is a file; set FORKKIT_WORKDIR or "
            "[workdir] path in fork.toml to a folder"
        ) from None
    except OSError as exc:
        raise ForkkitError(
            f"{root}: cannot create the workdir ({exc.strerror}); "
            "set FORKKIT_WORKDIR to a writable folder"
        ) from None
    if not os.access(root, os.W_OK | os.X_OK):
        raise ForkkitError(
            f"{root}: the workdir is not writable; fix its permissions "
            "or set FORKKIT_WORKDIR to a writable folder"
        )
    return root


@dataclass(frozen=True)
class ReportFolder:
    """One run's output folder and where it is published."""

    path: Path
    dest: Path

    def publish(self) -> Path:
        """Move the run into place (replacing the old report); idempotent."""
        if not self.path.exists():
            return self.dest
        self.dest.parent.mkdir(parents=True, exist_ok=True)
        old = self.path.with_name(f"{self.path.name}.old")
        faults.point(f"publish {self.dest.name}")
        if self.dest.exists():
            os.replace(self.dest, old)
        os.replace(self.path, self.dest)
        shutil.rmtree(old, ignore_errors=True)
        return self.dest


def _write_holder(path: Path, command: str) -> None:
    tmp = path.with_name(f"{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps({"pid": os.getpid(), "command": command}))
    os.replace(tmp, path)


# -- run folders outside the workdir (``--out DIR``) --------------------------
RUN_MARKER = ".forkkit-run"


@contextmanager
def _folder_at(dest: Path, stem: str) -> Iterator[ReportFolder]:
    """A fresh run folder published as ``dest``, like ``reports/STEM``.

    ``dest`` must be new, empty, or an earlier report of ``stem``: a folder
    holding anything else is refused (one line), never replaced. The run is
    staged in a hidden sibling of ``dest``, so publishing is one rename.
    """
    _check_report_dest(dest, stem)
    prefix = f".{dest.name}.run-"
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        _prune_dead_runs(dest.parent, prefix)
        path = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=dest.parent))
        (path / RUN_MARKER).write_text(f"{stem}\n")
    except OSError as exc:
        raise ForkkitError(
            f"{dest}: cannot create the report folder ({exc.strerror or exc}); "
            "pick a writable folder"
        ) from None
    _retire(dest, path)
    with publishing(ReportFolder(path=path, dest=dest)) as run:
        yield run


def _retire(dest: Path, run: Path) -> None:
    """Remove the previous report at the start of a run.

    Even a run killed with SIGKILL then leaves no earlier report looking
    current; the old folder is renamed first, so it never shows half-deleted.
    """
    if dest.is_dir():
        old = run.with_name(f"{run.name}.previous")
        os.replace(dest, old)
        shutil.rmtree(old, ignore_errors=True)


# Run folders being written, and where each is published (innermost first
# when one run's folder holds another's, as rebase holds its red-green).
_STAGED: dict[Path, Path] = {}


def published_path(path: Path) -> Path:
    """Where ``path`` will lie once the run folders holding it are published
    (``path`` itself when it is in none): what a console message names, so
    the name still holds after the run. Reports name their files relative to
    their own folder instead."""
    staged = sorted(_STAGED.items(), key=lambda kv: len(kv[0].parts), reverse=True)
    for run, dest in staged:
        if path.is_relative_to(run):
            path = dest / path.relative_to(run)
    return path


@contextmanager
def publishing(run: ReportFolder) -> Iterator[ReportFolder]:
    """Publish ``run`` however the block ends (``FAILED.txt`` if it raised)."""
    _STAGED[run.path] = run.dest
    try:
        yield run
    except BaseException as exc:
        note = f"{type(exc).__name__}: {exc}".strip()
        (run.path / "FAILED.txt").write_text(f"this run did not finish: {note}\n")
        run.publish()
        raise
    finally:
        _STAGED.pop(run.path, None)
    run.publish()


def _check_report_dest(dest: Path, stem: str) -> None:
    if dest.exists() and not dest.is_dir():
        raise ForkkitError(f"{dest}: is a file; pick a folder for the report")
    if not dest.is_dir():
        return
    names = sorted(p.name for p in dest.iterdir())
    if RUN_MARKER in names:
        return
    # an older forkkit wrote STEM.md, STEM_red.xml, ... straight into --out
    foreign = [n for n in names if not n.startswith(stem) and n != "FAILED.txt"]
    if foreign:
        shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise ForkkitError(
            f"{dest}: holds {len(foreign)} file(s) forkkit did not write ({shown}); "
            "pick a new or empty folder for the report"
        )


def _prune_dead_runs(parent: Path, prefix: str) -> None:
    """Remove staging folders of runs killed before they could publish."""
    for old in parent.glob(f"{prefix}*-*"):
        pid = old.name[len(prefix) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
