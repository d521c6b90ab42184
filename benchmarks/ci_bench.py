# SPDX-License-Identifier: Apache-2.0
"""The README's two commands on a fresh clone, timed: what CI pays.

Clones this checkout's HEAD into a temporary folder (nothing of this
checkout's ``.forkkit`` or ``.nox`` comes along: the sdist download, the
test venv and the nox venvs are built again), then runs, one after the
other, ``./dev -s red_green`` (the main job) and ``./dev -s lint tests``
(the tests), as ``.ci/run`` does. Prints each command's wall time and each
nox session's, with the load average before and after.

    python benchmarks/ci_bench.py [--repeat N] [--keep]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from forkkit.output.report import md_table

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (
    ("main job", ["./dev", "-s", "red_green"]),
    ("tests", ["./dev", "-s", "lint", "tests"]),
)
SESSION = re.compile(r"nox > Session (\S+) was successful in (.+)$", re.MULTILINE)


def _seconds(text: str) -> float:
    """nox's '1 minute 12 seconds' (or '41 seconds') in seconds."""
    total = 0.0
    for n, unit in re.findall(r"([\d.]+) (minute|second)", text):
        total += float(n) * (60 if unit == "minute" else 1)
    return total


def one_round(workdir: Path) -> list[list[str]]:
    """Clone, run both commands; a row per command (fails loudly on a failure)."""
    clone = workdir / "forkkit"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("UV", "VIRTUAL_ENV")}
    out: list[list[str]] = []
    for label, cmd in COMMANDS:
        log = workdir / f"{label.replace(' ', '_')}.log"
        start = time.monotonic()
        with log.open("w") as fh:
            proc = subprocess.run(cmd, cwd=clone, env=env, stdout=fh, stderr=fh)
        wall = time.monotonic() - start
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}; see {log}")
        sessions = ", ".join(
            f"{name} {_seconds(took):.0f} s"
            for name, took in SESSION.findall(log.read_text())
        )
        out.append([label, " ".join(cmd), f"{wall:.0f}", sessions])
    total = sum(float(r[2]) for r in out)
    out.append(["total", "", f"{total:.0f}", f"{total / 60:.1f} min"])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--repeat", type=int, default=1, help="rounds (default 1)")
    p.add_argument("--keep", action="store_true", help="keep the clones and logs")
    a = p.parse_args(argv)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    load_before = os.getloadavg()
    tables = []
    for r in range(max(a.repeat, 1)):
        tmp = Path(tempfile.mkdtemp(prefix=f"ci-bench-{r + 1}-"))
        print(f"round {r + 1}: a fresh clone of {head} in {tmp}", file=sys.stderr)
        tables.append(one_round(tmp))
        if not a.keep:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    load_after = os.getloadavg()
    print(f"### The README's two commands on a fresh clone of {head}\n")
    loads = [", ".join(f"{x:.2f}" for x in la) for la in (load_before, load_after)]
    print(
        f"{os.cpu_count()} CPUs; load average before: {loads[0]}; after: {loads[1]}\n"
    )
    for r, rows in enumerate(tables, 1):
        print(f"Round {r}:\n")
        print(md_table(["Step", "Command", "Wall s", "nox sessions"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
