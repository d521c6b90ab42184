# SPDX-License-Identifier: Apache-2.0
"""All-or-nothing updates of the user's files (``patches/``, ``fork.toml``).

New contents are staged beside their targets, then a journal is switched
from "staging" to "commit" with one atomic rename: that is the commit point.
Only then are the staged files renamed into place. :func:`recover`, run at
the start of every writing command, finishes a committed transaction that
was interrupted (kill -9 included) and discards one that was not.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from forkkit import faults, signals
from forkkit.errors import ForkkitError
from forkkit.process import pid_alive

JOURNAL = ".forkkit-txn.json"
_STAGED = ".forkkit-new"


def _staged(target: Path) -> Path:
    return target.with_name(f".{target.name}{_STAGED}")


@contextmanager
def checkout_lock(root: Path, *, wait: bool = False) -> Iterator[None]:
    """Hold the checkout's write lock for the block: an flock on its folder
    (no file is written), so two commands with different workdirs never
    write one ``patches/`` and journal at once. The kernel drops it when the
    holder dies, kill -9 included."""
    fd = os.open(root, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise ForkkitError(
                f"{root}: another forkkit command is writing this checkout (with "
                "another workdir); wait for it to finish, or rerun with --wait"
            ) from None
        yield
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a synced temporary file beside it,
    renamed into place (and removed if the write fails or is interrupted)."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        faults.point(f"replace {path.name}")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@dataclass
class FileTransaction:
    """Collect writes and deletes; :meth:`commit` applies all of them or none."""

    root: Path  # where the journal lives (the folder of fork.toml)
    writes: dict[Path, bytes] = field(default_factory=dict)
    deletes: set[Path] = field(default_factory=set)

    def write(self, path: Path, data: str | bytes) -> None:
        """Replace ``path``'s contents (creating it) on commit."""
        self.writes[path.absolute()] = data.encode() if isinstance(data, str) else data
        self.deletes.discard(path.absolute())

    def delete(self, path: Path) -> None:
        """Remove ``path`` on commit."""
        self.deletes.add(path.absolute())
        self.writes.pop(path.absolute(), None)

    def commit(self) -> None:
        """Stage, switch the journal to "commit", then move files into place."""
        journal = self.root / JOURNAL
        recover(self.root)
        ops = {
            "writes": [str(p) for p in sorted(self.writes)],
            "deletes": [str(p) for p in sorted(self.deletes)],
        }
        try:
            write_atomic(journal, json.dumps({"state": "staging", **ops}).encode())
            for path, data in self.writes.items():
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(_staged(path), data)
            with signals.deferred():  # from the commit point to the last move
                write_atomic(journal, json.dumps({"state": "commit", **ops}).encode())
                _finish(journal, ops)
        except OSError as exc:
            recover(self.root)
            raise ForkkitError(
                f"{exc.filename or self.root}: cannot write ({exc.strerror}); "
                "nothing was changed, check the folder's permissions"
            ) from None


def _finish(journal: Path, ops: dict[str, list[str]]) -> None:
    for name in ops["writes"]:
        staged = _staged(Path(name))
        if staged.exists():
            faults.point(f"move {Path(name).name}")
            os.replace(staged, name)
    for name in ops["deletes"]:
        faults.point(f"delete {Path(name).name}")
        Path(name).unlink(missing_ok=True)
    journal.unlink(missing_ok=True)


def _confined(journal: Path, root: Path, names: list[object]) -> None:
    """Refuse a journal that names a file outside the checkout (forkkit only
    journals ``patches/`` and ``fork.toml``): it is left as it is."""
    top = root.resolve()
    for name in names:
        path = Path(str(name))
        if not path.is_absolute() or not path.resolve().is_relative_to(top):
            raise ForkkitError(
                f"{journal}: names {name}, outside {top}; forkkit did not write "
                "this journal: read it, then remove it"
            )


def _sweep(targets: list[Path]) -> None:
    """Remove the temporary files a killed :func:`write_atomic` left beside
    ``targets`` (their own, and their staged copies'): ``.NAME.tmp-PID`` of
    processes that are gone."""
    for target in targets:
        for name in (target.name, _staged(target).name):
            for tmp in target.parent.glob(f".{name}.tmp-*"):
                pid = tmp.name.rsplit("-", 1)[1]
                if pid.isdigit() and not pid_alive(int(pid)):
                    tmp.unlink(missing_ok=True)


def _operations(journal: Path, data: object) -> dict[str, list[str]]:
    """The journal's writes and deletes; one line when it is not a journal
    this tool wrote (a list, say): it is left as it is, for a person."""
    ops = (
        {k: data.get(k, []) for k in ("writes", "deletes")}
        if isinstance(data, dict)
        else None
    )
    if ops is None or not all(
        isinstance(v, list) and all(isinstance(n, str) for n in v) for v in ops.values()
    ):
        raise ForkkitError(
            f"{journal}: not a forkkit transaction journal; check the files it "
            "may name, then delete it"
        )
    return ops


def recover(root: Path) -> str | None:
    """Finish or discard an interrupted transaction; say which (None: none).

    Temporary files of a killed write (the journal's, a staged file's) go too.
    """
    journal = root / JOURNAL
    _sweep([journal])
    try:
        data = json.loads(journal.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        journal.unlink(missing_ok=True)  # torn before the first rename: nothing staged
        return "discarded"
    ops = _operations(journal, data)
    _confined(journal, root, [*ops["writes"], *ops["deletes"]])
    _sweep([Path(name) for name in ops["writes"]])
    if data.get("state") == "commit":
        _finish(journal, ops)
        return "finished"
    for name in ops["writes"]:
        _staged(Path(name)).unlink(missing_ok=True)
    journal.unlink(missing_ok=True)
    return "discarded"
