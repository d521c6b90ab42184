"""Wall time of ``forkkit red-green`` vs the same two pytest runs done by hand.

By hand (in a worktree of the fork's HEAD, prepared before the clock starts)::

    git checkout base -- RUNTIME_FILES; pytest TESTS
    git checkout HEAD -- RUNTIME_FILES; pytest TESTS

Toolkit: ``forkkit red-green --no-related`` as a subprocess (CLI start-up,
materialize check, scratch worktree, JUnit, classification and reports
included), sequential and ``--parallel``. Modes alternate within each round so
machine load hits all of them alike. Prints a Markdown table with ratios of
wall time and of CPU time (children's rusage: what the runs cost the machine).

    python benchmarks/red_green_bench.py [--repeat N] [--related] [-- PYTEST_ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from forkkit.config import ForkConfig, load_config
from forkkit.forktree import BASE_TAG, ForkTree, materialize
from forkkit.progress import say
from forkkit.report import md_table
from forkkit.testenv import TestEnv, ensure_testenv
from forkkit.vcs import Repo


def _children_cpu() -> float:
    """User + system CPU seconds of all waited-for child processes so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def by_hand(
    wt: Repo, cfg: ForkConfig, env: TestEnv, runs: list[tuple[str, list[str]]]
) -> float:
    """The checkouts and plain pytest runs a developer would type."""
    files = list(cfg.fix.runtime_files)
    cmd = [str(env.python), "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    run_env = env.environ(wt.path)
    start = time.monotonic()
    for rev, args in runs:
        # what the developer types: plain git, as in the module docstring
        checkout = ["git", "checkout", "-q", rev, "--", *files]
        subprocess.run(checkout, cwd=wt.path, check=True)
        subprocess.run(
            [*cmd, *args],
            cwd=wt.path,
            env=run_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    return time.monotonic() - start


def toolkit(cfg: ForkConfig, tree: ForkTree, args: list[str], out: Path) -> float:
    """``forkkit red-green`` end to end; fails loudly if the proof is not valid."""
    cmd = [sys.executable, "-m", "forkkit", "--config", str(cfg.path), "red-green"]
    cmd += ["--dest", str(tree.path), "--out", str(out), *args]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"forkkit red-green exited {proc.returncode}: {tail}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", type=Path, default=Path("fork.toml"))
    p.add_argument("--repeat", type=int, default=1, help="rounds (default 1)")
    p.add_argument("--tests", nargs="+", help="default: fork.toml focused_tests")
    p.add_argument("--related", action="store_true", help="include related suites")
    p.add_argument("--no-parallel", action="store_true", help="skip --parallel mode")
    p.add_argument("--json", type=Path, help="also write the numbers here")
    p.add_argument("pytest_args", nargs="*", help="after '--': pytest options")
    a = p.parse_args(argv)

    cfg = load_config(a.config)
    tree = materialize(cfg)
    env = ensure_testenv(cfg, tree.path)
    targets = list(a.tests or cfg.fix.focused_tests)
    extra = list(a.pytest_args)
    hand_runs = [(BASE_TAG, [*extra, *targets]), ("HEAD", [*extra, *targets])]
    if a.related:
        hand_runs.append(("HEAD", [*extra, *cfg.fix.related_suites]))
    opts = ["--tests", *targets, "--related" if a.related else "--no-related"]
    passthrough = ["--", *extra] if extra else []
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp,
        tree.repo.worktree("HEAD", "bench") as wt,
    ):
        out = Path(tmp) / "reports"  # replaced by each run (a run folder)
        modes: dict[str, Callable[[], float]] = {
            "by hand (git checkout + pytest, twice)": lambda: by_hand(
                wt, cfg, env, hand_runs
            ),
            "forkkit red-green": lambda: toolkit(
                cfg, tree, [*opts, "--parallel", "off", *passthrough], out
            ),
        }
        if not a.no_parallel:
            modes["forkkit red-green --parallel"] = lambda: toolkit(
                cfg, tree, [*opts, "--parallel", "on", *passthrough], out
            )
        names = list(modes)
        for r in range(a.repeat):
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                say(f"round {r + 1}/{a.repeat}: {name}")
                before = _children_cpu()
                times.setdefault(name, []).append(modes[name]())
                cpu.setdefault(name, []).append(_children_cpu() - before)
                say(f"  {times[name][-1]:.1f}s wall, {cpu[name][-1]:.1f}s CPU")
    hand = statistics.median(times[names[0]])
    hand_cpu = statistics.median(cpu[names[0]])
    rows = [
        [
            name,
            len(ts),
            f"{statistics.median(ts):.1f}",
            f"{min(ts):.1f}",
            f"{statistics.median(ts) / hand:.2f}x",
            f"{statistics.median(cpu[name]):.1f}",
            f"{statistics.median(cpu[name]) / hand_cpu:.2f}x",
        ]
        for name, ts in times.items()
    ]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"### Red/green wall time ({os.cpu_count()} CPUs, load {load})\n")
    shown = " ".join([*targets, *extra])
    print(f"Tests: `{shown}`{' + related suites' if a.related else ''}\n")
    heads = ["Mode", "Runs", "Median wall s", "Min wall s", "Wall vs by hand"]
    print(md_table([*heads, "Median CPU s", "CPU vs by hand"], rows))
    if a.json:
        data = {"targets": targets, "pytest_args": extra, "wall": times, "cpu": cpu}
        a.json.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
