# SPDX-License-Identifier: Apache-2.0
"""A real vendor series carried and rebased, against plain git by hand.

Reads a vendor's plain diff (the corpus, ``../shared/corpus``: data for
benches only, never copied into the project), then in a scratch folder:

    forkkit init NAME==BASE; forkkit fix add vendor DIFF --split files --untested ...
    forkkit materialize                                  # timed: the split series
    forkkit rebase --onto NAME==ONTO [--flag ...]        # timed: the dry run

and, as the floor, the same split patches replayed by hand with plain git on
the new upstream's pristine tree (forkkit's rebase repository, so no sdist
is fetched again)::

    git apply --check PATCH && git am PATCH     # or: it reverse-applies, or
    git am -3 PATCH || git am --abort           # 3-way, or it fails

It prints the verdict and conflict-kind counts of the rebase report, the
times, and the ratio of the dry run to the floor (the load average before
and after).

    python benchmarks/series_bench.py DIFF --base vllm==0.14.0 --onto vllm==0.21.0
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


def _forkkit(*args: str, cwd: Path) -> float:
    """Run ``forkkit ARGS`` (its output to a log beside); its wall seconds."""
    start = time.monotonic()
    with (cwd / "forkkit.log").open("a") as log:
        proc = subprocess.run(
            [sys.executable, "-m", "forkkit", *args],
            cwd=cwd,
            stdout=log,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if proc.returncode not in (0, 1):
        raise SystemExit(
            f"forkkit {args[0]}: exit {proc.returncode}; see {cwd}/forkkit.log"
        )
    return time.monotonic() - start


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b"}
    env |= {"GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )


def _floor(
    repo: Path, new_base: str, patches: list[Path]
) -> tuple[float, dict[str, int]]:
    """Plain git by hand: each patch checked, then applied (3-way where it
    does not apply as it is), or given up on."""
    work = repo.parent / "floor"
    _git(repo, "worktree", "add", "--detach", str(work), new_base)
    counts = {"applies": 0, "reverse-applies": 0, "3way": 0, "fails": 0}
    start = time.monotonic()
    for patch in patches:
        if _git(work, "apply", "--check", str(patch)).returncode == 0:
            counts["applies"] += 1
            _git(work, "am", str(patch))
        elif _git(work, "apply", "--check", "-R", str(patch)).returncode == 0:
            counts["reverse-applies"] += 1
        elif _git(work, "am", "-3", str(patch)).returncode == 0:
            counts["3way"] += 1
        else:
            _git(work, "am", "--abort")
            counts["fails"] += 1
    return time.monotonic() - start, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("diff", type=Path, help="the vendor's plain diff")
    parser.add_argument("--base", required=True, help="NAME==VERSION it applies to")
    parser.add_argument("--onto", required=True, help="NAME==VERSION to rebase onto")
    parser.add_argument(
        "--flag",
        action="append",
        default=[],
        help="a rebase option for both runs (repeatable; default: none, the "
        "plain dry run a user types)",
    )
    args = parser.parse_args()
    diff = args.diff if args.diff.is_absolute() else Path.cwd() / args.diff
    if not diff.is_file():
        print(
            f"{diff}: no such file (the corpus is in {CORPUS}; absent: "
            "nothing to measure)"
        )
        return
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="series-bench-") as tmp:
        proj = Path(tmp) / "proj"
        _forkkit("init", args.base, "--dir", str(proj), cwd=Path(tmp))
        conf = ["--config", str(proj / "fork.toml")]
        _forkkit(*conf, "materialize", cwd=Path(tmp))
        why = "vendor series, checked by git apply only"
        add = ["fix", "add", "vendor", str(diff), "--split", "files", "--untested", why]
        t_add = _forkkit(*conf, *add, "--related", cwd=Path(tmp))
        t_mat = _forkkit(*conf, "materialize", cwd=Path(tmp))
        rebase = ["rebase", "--onto", args.onto, *args.flag]
        _forkkit(*conf, *rebase, cwd=Path(tmp))  # fetches the new sdist once
        t_reb = _forkkit(*conf, *rebase, cwd=Path(tmp))
        doc = json.loads((proj / ".forkkit/reports/rebase/rebase.json").read_text())
        repo = proj / ".forkkit" / "rebase" / "repo"
        new_base = _new_base(repo, args.onto)
        patches = sorted((proj / "patches").glob("*.patch"))
        t_floor, floor = _floor(repo, new_base, patches)
    after = os.getloadavg()
    files = sum(len(p["files"]) for p in doc["patches"])
    print(
        f"# {diff.name}: {args.base} -> {args.onto}, {len(patches)} patches, "
        f"{files} files"
    )
    print(f"verdicts and kinds: {doc['file_counts']}")
    print(f"not tried: {sum(p['status'] == 'not-tried' for p in doc['patches'])}")
    print(f"plain git floor: {floor}")
    print(f"fix add --split files: {t_add:.1f} s; materialize: {t_mat:.1f} s")
    print(
        f"dry-run rebase: {t_reb:.1f} s; plain git floor: {t_floor:.1f} s; "
        f"ratio {t_reb / t_floor:.2f}x"
    )
    print(f"load average before {load[0]:.2f}, after {after[0]:.2f}")


def _new_base(repo: Path, onto: str) -> str:
    """The pristine commit of ``onto`` in the rebase repository (its subject)."""
    version = onto.split("==", 1)[1]
    out = _git(repo, "log", "--all", "--format=%H %s").stdout
    for line in out.splitlines():
        sha, _, subject = line.partition(" ")
        if subject.startswith("Upstream ") and f" {version} " in f"{subject} ":
            return sha
    raise SystemExit(f"no pristine commit of {onto} in {repo}")


if __name__ == "__main__":
    main()
