# SPDX-License-Identifier: Apache-2.0
"""Wall time of ``forkkit materialize``, fresh and no-op, this code vs a baseline.

Both run side by side in one process, on the real pinned upstream: the
baseline is another revision of forkkit itself (default: the last commit
before the safe fork layer), checked out in a scratch worktree and put first
on ``PYTHONPATH``. Each round runs, in alternating order, a fresh
materialize (an empty workdir holding only the verified sdist) and then a
no-op one. Prints a Markdown table of medians and ratios.

    python benchmarks/materialize_bench.py [--baseline REV] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from forkkit.config import load_config
from forkkit.output.progress import say
from forkkit.output.report import md_table
from forkkit.upstream.sdist import fetch_sdist
from forkkit.vcs import Repo

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "7069411"  # the last commit before the safe fork layer


def _materialize(src: Path, workdir: Path) -> float:
    """Seconds one ``python -m forkkit materialize`` takes with ``src`` first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORKKIT_")}
    env.update(PYTHONPATH=str(src), FORKKIT_WORKDIR=str(workdir))
    start = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "forkkit", "materialize"],
        cwd=ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.monotonic() - start


def _round(
    impls: dict[str, Path], sdist: Path, tmp: Path, order: list[str]
) -> dict[str, tuple[float, float]]:
    """One fresh and one no-op materialize per implementation."""
    times = {}
    for name in order:
        workdir = tmp / f"{name}-{time.monotonic_ns()}"
        cache = workdir / "cache" / "sdist"
        cache.mkdir(parents=True)
        shutil.copy2(sdist, cache / sdist.name)
        fresh = _materialize(impls[name], workdir)
        noop = _materialize(impls[name], workdir)
        times[name] = (fresh, noop)
        shutil.rmtree(workdir)
        say(f"{name}: fresh {fresh:.2f}s, no-op {noop:.2f}s")
    return times


def main() -> int:
    """Run the rounds and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE, help="forkkit revision to compare")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (median taken)")
    args = ap.parse_args()
    cfg = load_config(ROOT / "fork.toml")
    sdist = fetch_sdist(cfg.upstream, cfg.work.sdist_cache)
    results: dict[str, list[tuple[float, float]]] = {"baseline": [], "this": []}
    with (
        Repo(ROOT).worktree(args.baseline, "bench-baseline") as old,
        tempfile.TemporaryDirectory(prefix="forkkit-bench-") as tmp,
    ):
        impls = {"baseline": old.path / "src", "this": ROOT / "src"}
        for i in range(args.repeat):
            order = ["baseline", "this"] if i % 2 == 0 else ["this", "baseline"]
            for name, t in _round(impls, sdist, Path(tmp), order).items():
                results[name].append(t)
    med = {
        name: tuple(statistics.median(t[k] for t in runs) for k in (0, 1))
        for name, runs in results.items()
    }
    rows = [
        [
            kind,
            f"{med['baseline'][k]:.2f}",
            f"{med['this'][k]:.2f}",
            f"{med['this'][k] / med['baseline'][k]:.2f}x",
        ]
        for k, kind in enumerate(("fresh", "no-op"))
    ]
    print(f"materialize, median of {args.repeat} rounds, baseline {args.baseline}:")
    print(md_table(["materialize", "baseline s", "this s", "this/baseline"], rows))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
