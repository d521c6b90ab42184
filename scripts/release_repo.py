# SPDX-License-Identifier: Apache-2.0
"""Build a local git upstream from release sdists: one commit per release.

GitHub is not reachable from our machines, so a git line over vLLM's real
releases is a ``file://`` repository made here, at run time, from the
sdists forkkit verified (never committed to this repository):

    python scripts/release_repo.py DEST SDIST...

Each sdist (``vllm-X.Y.Z.tar.gz``, in the order given) becomes one commit on
``main`` whose tree is the sdist's files (ignore rules do not apply), with
the subject ``Release vX.Y.Z`` and the tag ``vX.Y.Z``. Dates are fixed, so
the same sdists give the same commit ids on every machine. Prints each
release's commit.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

_DATE = "2026-01-01T00:00:00+00:00"
_ENV = {
    "GIT_AUTHOR_NAME": "release",
    "GIT_AUTHOR_EMAIL": "release@localhost",
    "GIT_COMMITTER_NAME": "release",
    "GIT_COMMITTER_EMAIL": "release@localhost",
    "GIT_AUTHOR_DATE": _DATE,
    "GIT_COMMITTER_DATE": _DATE,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def _git(work: Path, *args: str) -> str:
    env = {**os.environ, **_ENV}
    done = subprocess.run(
        ["git", *args], cwd=work, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _version(sdist: Path) -> str:
    name = sdist.name.removesuffix(".tar.gz")
    return name.split("-", 1)[1]


def build(dest: Path, sdists: list[Path]) -> dict[str, str]:
    """The repository at ``dest`` (a bare clone of the work repo); each
    release's commit."""
    commits: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="release-repo-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        _git(work, "init", "-q", "-b", "main")
        for sdist in sdists:
            version = _version(sdist)
            for entry in work.iterdir():
                if entry.name != ".git":
                    shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
            with tarfile.open(sdist) as tar:
                top = tar.getnames()[0].split("/", 1)[0]
                tar.extractall(Path(tmp) / "x", filter="data")
            for entry in (Path(tmp) / "x" / top).iterdir():
                shutil.move(str(entry), work / entry.name)
            shutil.rmtree(Path(tmp) / "x")
            _git(work, "add", "-A", "-f", ".")
            _git(work, "commit", "-q", "--allow-empty", "-m", f"Release v{version}")
            _git(work, "tag", f"v{version}")
            commits[version] = _git(work, "rev-parse", "HEAD")
        if dest.exists():
            shutil.rmtree(dest)
        _git(work, "clone", "-q", "--bare", str(work), str(dest.absolute()))
    return commits


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for version, commit in build(Path(argv[0]), [Path(a) for a in argv[1:]]).items():
        print(f"v{version} {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
