# SPDX-License-Identifier: Apache-2.0
"""One cache of finished pytest runs (``<workdir>/results``).

A run is reused only when everything that decides its outcome is the same:
the git tree that ran, the test environment (its key, interpreter, the
digest of every file it can import, and the whole process environment a run
is given), the pytest arguments, the deselect list and the targets
(:class:`ResultKey`). An entry holds the run's JUnit XML, its log and a
small ``run.json`` with the sha256 of both files; it is written to a
temporary folder and renamed into place, so a half-written entry is never
read, and an entry whose files no longer match their digests (edited,
truncated, a file missing) is a miss, said once, replaced by the next run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from forkkit import faults
from forkkit.output.progress import say
from forkkit.testing.env import TestEnv
from forkkit.testing.importdigest import import_digest
from forkkit.testing.pytest_run import PytestRun

# Bump when what forkkit adds to every pytest command changes.
# 4: the import digest and the built environment; 3: packages and caller env
CACHE_FORMAT = 4


def _sha256(path: Path) -> str | None:
    """The file's sha256; None when it is missing."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


JUNIT, LOG, META = "junit.xml", "pytest.log", "run.json"
TREE = "<tree>"  # the run's folder in a key: the same tree runs anywhere


@dataclass(frozen=True)
class ResultKey:
    """Everything that decides a pytest run's outcome."""

    tree: str  # git tree id that ran
    env_key: str  # the test env's key (requirements digest, or "external")
    python: str
    environ: dict[str, str] = field(default_factory=dict)  # the run's, whole
    pytest_args: tuple[str, ...] = ()
    deselect: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    imports: str = ""  # digest of every file the interpreter can import

    @classmethod
    def of(
        cls,
        env: TestEnv,
        tree: str,
        targets: Sequence[str],
        *,
        pytest_args: Sequence[str],
    ) -> ResultKey:
        """The key of running ``targets`` with ``env`` on git tree ``tree``."""
        return cls(
            tree=tree,
            env_key=env.key,
            python=str(env.python),
            environ=env.environ(Path(TREE)),
            pytest_args=tuple(pytest_args),
            deselect=tuple(env.deselect),
            targets=tuple(targets),
            imports=import_digest(env.python, env.store),
        )

    def digest(self) -> str:
        """sha256 of a canonical JSON of the key."""
        doc = {"format": CACHE_FORMAT, **asdict(self)}
        text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class CachedRun:
    """A stored run: its files and what it returned."""

    junit: Path
    log: Path
    returncode: int
    seconds: float
    command: str
    extra: dict[str, Any] = field(default_factory=dict)  # what the caller stored
    started: float = 0.0  # when it started (epoch seconds)
    ran_now: bool = False  # stored by this very command: not a cached run

    def restore(self, out_dir: Path, name: str, targets: Sequence[str]) -> PytestRun:
        """This run as a fresh one of ``targets``: its JUnit XML and log copied
        into ``out_dir`` (as ``NAME.xml``/``NAME.log``), marked ``cached``
        unless this command ran it (a run packed ahead of the proof that
        reads it, or shared by several proofs)."""
        out_dir.mkdir(parents=True, exist_ok=True)
        junit, log = out_dir / f"{name}.xml", out_dir / f"{name}.log"
        junit.write_bytes(self.junit.read_bytes())
        log.write_bytes(self.log.read_bytes())
        return PytestRun(
            tuple(targets),
            self.returncode,
            junit,
            log,
            self.seconds,
            self.command,
            cached=not self.ran_now,
            started=self.started if self.ran_now else 0.0,
        )


@dataclass(frozen=True)
class Unfinished:
    """A run this command made that did not finish (it timed out, or pytest
    died before writing its JUnit XML): never stored on disk, but the same
    run asked for again by this command is this one, so a hang is waited
    for once (its log is kept in memory)."""

    run: PytestRun
    log: bytes

    def restore(self, out_dir: Path, name: str) -> PytestRun:
        """This run again, its log copied into ``out_dir`` as ``NAME.log``."""
        out_dir.mkdir(parents=True, exist_ok=True)
        log = out_dir / f"{name}.log"
        log.write_bytes(self.log)
        junit = out_dir / f"{name}.xml"
        junit.unlink(missing_ok=True)
        return replace(self.run, junit=junit, log=log)


@dataclass(frozen=True)
class ResultCache:
    """Finished runs by :class:`ResultKey`; ``fresh`` reads only what this
    cache object stored itself (a run made now, shared by the proofs of one
    command), and stores everything. Runs of this command that did not
    finish are held in memory only (:class:`Unfinished`)."""

    root: Path
    fresh: bool = False
    stored_now: set[str] = field(default_factory=set, compare=False)
    unfinished_now: dict[str, Unfinished] = field(default_factory=dict, compare=False)

    def note_unfinished(self, key: ResultKey, run: PytestRun) -> None:
        """Hold ``run`` (it did not finish) for this command's later asks."""
        try:
            log = run.log.read_bytes()
        except OSError:
            return
        self.unfinished_now[key.digest()] = Unfinished(run, log)

    def unfinished(self, key: ResultKey) -> Unfinished | None:
        """This command's unfinished run of ``key``, if it made one."""
        return self.unfinished_now.get(key.digest())

    def _entry(self, digest: str) -> Path:
        return self.root / digest[:2] / digest

    def get(self, key: ResultKey) -> CachedRun | None:
        """The stored run of ``key``, or None (a miss, or ``fresh``)."""
        return self.lookup(key.digest())

    def lookup(self, digest: str) -> CachedRun | None:
        """The stored run of a key's digest, or None (a miss, or ``fresh``)."""
        entry = self._entry(digest)
        if self.fresh and digest not in self.stored_now:
            return None
        if not (entry / META).is_file():
            return None
        try:
            meta: dict[str, Any] = json.loads((entry / META).read_text())
            stored = {name: _sha256(entry / name) for name in (JUNIT, LOG)}
            if meta.get("sha256") != stored:
                say(
                    f"result cache: entry {digest[:12]} does not hold what it "
                    "stored (edited, truncated or incomplete); running again"
                )
                return None
            return CachedRun(
                junit=entry / JUNIT,
                log=entry / LOG,
                returncode=int(meta["returncode"]),
                seconds=float(meta["seconds"]),
                command=str(meta["command"]),
                extra=dict(meta.get("extra", {})),
                started=float(meta.get("started", 0.0)),
                ran_now=digest in self.stored_now,
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None  # unreadable: treated as a miss, replaced by the next run

    def put(
        self, key: ResultKey, run: PytestRun, extra: Mapping[str, Any] | None = None
    ) -> None:
        """Store a finished run (JUnit + log, plus the caller's ``extra``);
        best effort, never fails a run."""
        entry = self._entry(key.digest())
        meta = {
            "key": {"format": CACHE_FORMAT, **asdict(key)},
            "returncode": run.returncode,
            "seconds": run.seconds,
            "command": run.command,
            "started": run.started,
            "extra": dict(extra or {}),
        }
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(
                tempfile.mkdtemp(prefix=f".{entry.name[:12]}-", dir=entry.parent)
            )
        except OSError:
            return
        try:
            shutil.copyfile(run.junit, tmp / JUNIT)
            shutil.copyfile(run.log, tmp / LOG)
            meta["sha256"] = {name: _sha256(tmp / name) for name in (JUNIT, LOG)}
            (tmp / META).write_text(json.dumps(meta, indent=2) + "\n")
            faults.point(f"cache {entry.name[:12]}")
            if entry.exists():
                shutil.rmtree(entry, ignore_errors=True)
            os.replace(tmp, entry)
            self.stored_now.add(key.digest())
        except (OSError, TypeError, ValueError):
            shutil.rmtree(tmp, ignore_errors=True)
