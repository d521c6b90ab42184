"""``forkkit red-green`` (with related suites) vs the seed PR's manual recipe.

The manual recipe, in a worktree of the fork's HEAD prepared before the clock
starts: for each fix that changes runtime files, its red (the fix's runtime
hunks reversed by hand, its focused tests, the files restored), then green
(every fix's focused tests) and the related suites::

    git show COMMIT -- FIX_RUNTIME | git apply -R; pytest FIX_FOCUSED  # red, per fix
    git restore --source HEAD -- FIX_RUNTIME
    pytest ALL_FOCUSED                                                # green
    pytest RELATED_SUITES                                             # related

A fix that only carries tests (a guard) has no red. The bench says which
line (config and pin) it measured; a series with runtime patches is the
headline, a guard-only one is marked as such.

The toolkit: ``forkkit red-green --fresh`` as a subprocess (CLI start-up,
materialize check, worktrees, JUnit, classification and reports included),
then the same command again without ``--fresh``: the cached rerun. The two
modes alternate their order from round to round; the table gives medians,
wall and CPU ratios (children's rusage: what the runs cost the machine) and
the load average before and after.

    python benchmarks/red_green_bench.py [--repeat N] [--parallel auto] [-- ARGS]
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
from dataclasses import dataclass
from pathlib import Path

from forkkit.config import ForkConfig, load_config
from forkkit.fork.fixes import FixSet, focused_targets, load_fixes
from forkkit.fork.tree import ForkTree, materialize
from forkkit.output.progress import say
from forkkit.output.report import md_table
from forkkit.patches.testids import node_id
from forkkit.testing.classify import classify_test
from forkkit.testing.env import TestEnv, ensure_testenv
from forkkit.testing.junit import parse_junit
from forkkit.vcs import Repo

sys.path.insert(0, str(Path(__file__).parent))
from timeline import HEADERS, Phase, phases, rows

MANUAL = "manual recipe (git restore; pytest: a red per fix, green, related)"
TOOLKIT = "forkkit red-green --fresh"
CACHED = "forkkit red-green (cached rerun)"


def _children_cpu() -> float:
    """User + system CPU seconds of all waited-for child processes so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass(frozen=True)
class Red:
    """One fix's red by hand: its patch commits (last first), runtime files
    and focused tests."""

    commits: tuple[str, ...]
    files: tuple[str, ...]
    targets: tuple[str, ...]
    fix: str = ""


def reds(tree: ForkTree, fixes: FixSet, head: str) -> list[Red]:
    commits = dict(tree.patch_commits)
    return [
        Red(
            tuple(commits[n] for n in reversed(f.patches)),
            f.runtime_files,
            focused_targets(tree, fixes, f, head=head),
            f.id,
        )
        for f in fixes.fixes
        if not f.tests_only
    ]


def manual(
    wt: Repo,
    env: TestEnv,
    plan: tuple[list[Red], list[str], list[str]],
    extra: list[str],
    junit: Path,
) -> float:
    """What the recipe types by hand: per fix, its runtime hunks reversed with
    git and its tests run; then green and the related suites. The reds' and
    green's JUnit go to ``junit`` (``red-FIX.xml``, ``green.xml``): what
    forkkit classified is checked against them."""
    by_fix, focused, related = plan
    pytest = [str(env.python), "-m", "pytest", "-p", "no:cacheprovider", "-q"]
    pytest += [f"--deselect={d}" for d in env.deselect] + extra
    run_env = env.environ(wt.path)

    def run(args: list[str], xml: str = "") -> None:
        out = [f"--junitxml={junit / xml}"] if xml else []
        subprocess.run(
            [*pytest, *out, *args],
            cwd=wt.path,
            env=run_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    start = time.monotonic()
    for red in by_fix:
        for commit in red.commits:  # plain git, as a person types it
            show = ["git", "show", "--format=", commit, "--", *red.files]
            diff = subprocess.run(show, cwd=wt.path, check=True, capture_output=True)
            apply = ["git", "apply", "-R"]
            subprocess.run(apply, cwd=wt.path, check=True, input=diff.stdout)
        run(list(red.targets), f"red-{red.fix}.xml")
        restore = ["git", "restore", "--source", "HEAD", "--", *red.files]
        subprocess.run(restore, cwd=wt.path, check=True)
    run(focused, "green.xml")  # green
    run(related)  # related suites
    return time.monotonic() - start


def toolkit(
    cfg: ForkConfig, tree: ForkTree, args: list[str], out: Path, *, cached: bool
) -> float:
    """``forkkit red-green`` end to end; fails loudly unless the proof is valid
    and every run was (``cached``) or was not taken from the result cache."""
    cmd = [sys.executable, "-m", "forkkit", "--config", str(cfg.path), "red-green"]
    cmd += ["--dest", str(tree.path), "--out", str(out), *args]
    start = time.monotonic()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"forkkit red-green exited {proc.returncode}: {tail}")
    summary = json.loads((out / "summary.json").read_text())
    docs = [
        json.loads((out / row["fix"] / "red_green.json").read_text())
        for row in summary["fixes"]
    ]
    # fresh: every red ran now, and the first fix's run on HEAD (the others
    # read it from the cache it was stored in by this very command)
    runs = [d["red"] for d in docs if d.get("mode") != "guard"]
    runs += [r for n in ("related", "green") if (r := docs[0].get(n))][:1]
    if any(r.get("cached", False) != cached for r in runs):
        raise SystemExit(f"expected cached={cached} for every run, got {runs}")
    return seconds


Classes = dict[str, dict[str, list[str]]]  # fix -> FAIL_TO_PASS/PASS_TO_PASS


def recipe_classes(junit: Path, by_fix: list[Red], files: set[str]) -> Classes:
    """Each fix's FAIL_TO_PASS and PASS_TO_PASS from the recipe's own runs
    (its red, and green restricted to the red's tests), as node ids."""
    green = parse_junit(junit / "green.xml")
    found: Classes = {}
    for red in by_fix:
        red_run = parse_junit(junit / f"red-{red.fix}.xml")
        cats: dict[str, list[str]] = {"FAIL_TO_PASS": [], "PASS_TO_PASS": []}
        for test in red_run.tests:
            cat = classify_test(red_run.tests[test], green.tests.get(test))
            if cat in cats:
                cats[cat].append(node_id(test, files) or test)
        found[red.fix] = {k: sorted(v) for k, v in cats.items()}
    return found


def toolkit_classes(out: Path) -> Classes:
    """Each proven fix's FAIL_TO_PASS and PASS_TO_PASS from forkkit's reports."""
    summary = json.loads((out / "summary.json").read_text())
    found: Classes = {}
    for row in summary["fixes"]:
        doc = json.loads((out / row["fix"] / "red_green.json").read_text())
        if doc.get("mode") != "guard":
            c = doc["classification"]
            kept = ("FAIL_TO_PASS", "PASS_TO_PASS")
            found[row["fix"]] = {k: sorted(c[k]) for k in kept}
    return found


def _rows(
    times: dict[str, list[float]], cpu: dict[str, list[float]]
) -> list[list[str]]:
    hand, hand_cpu = statistics.median(times[MANUAL]), statistics.median(cpu[MANUAL])
    return [
        [
            name,
            str(len(ts)),
            f"{statistics.median(ts):.1f}",
            f"{min(ts):.1f} to {max(ts):.1f}",
            f"{statistics.median(ts) / hand:.2f}x",
            " ".join(f"{t / h:.2f}x" for t, h in zip(ts, times[MANUAL], strict=False)),
            f"{statistics.median(cpu[name]):.1f}",
            f"{statistics.median(cpu[name]) / hand_cpu:.2f}x",
        ]
        for name, ts in times.items()
    ]


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument(
        "--config",
        type=Path,
        help="the line to measure (default: fork.toml's line, or else the first "
        "of its [line] also whose series has runtime patches: a proof, not a guard)",
    )
    p.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    p.add_argument("--parallel", choices=["auto", "on", "off"], default="auto")
    p.add_argument("--json", type=Path, help="also write the numbers here")
    p.add_argument("pytest_args", nargs="*", help="after '--': pytest options")
    return p.parse_args(argv)


def _rounds(
    modes: dict[str, Callable[[], float]], repeat: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Run every mode ``repeat`` times, alternating their order; wall and CPU."""
    times: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    pairs = [[MANUAL], [TOOLKIT, CACHED]]  # the cached rerun follows a fresh run
    for r in range(repeat):
        for label in [m for group in pairs[:: 1 if r % 2 == 0 else -1] for m in group]:
            say(f"round {r + 1}/{repeat}: {label}")
            before = _children_cpu()
            times.setdefault(label, []).append(modes[label]())
            cpu.setdefault(label, []).append(_children_cpu() - before)
            say(f"  {times[label][-1]:.1f}s wall, {cpu[label][-1]:.1f}s CPU")
    return times, cpu


def _print_timeline(found: list[Phase], wall: float, cpu: float) -> None:
    """Where the last fresh run's time went, and what the cores did not do."""
    cores = os.cpu_count() or 1
    print("\n### Phase timeline of the last `forkkit red-green --fresh`\n")
    print(md_table(HEADERS, rows(found)))
    idle = max(cores * wall - cpu, 0.0)
    print(
        f"\nWall {wall:.1f} s on {cores} cores = {cores * wall:.1f} core-seconds; "
        f"CPU used {cpu:.1f} s; idle {idle:.1f} core-seconds "
        f"({idle / (cores * wall):.0%})\n"
    )


def proof_line(path: Path | None) -> Path:
    """``path``, or the first line (fork.toml, then its ``[line] also``)
    with a fix that changes runtime files."""
    if path is not None:
        return path
    main_cfg = load_config(Path("fork.toml"))
    for cfg in [main_cfg, *(load_config(p) for p in main_cfg.also)]:
        if any(not f.tests_only for f in load_fixes(cfg).fixes):
            return Path(os.path.relpath(cfg.path))
    return Path("fork.toml")


def main(argv: list[str] | None = None) -> int:
    a = _parse(argv)
    a.config = proof_line(a.config)
    cfg = load_config(a.config)
    tree = materialize(cfg)
    env = ensure_testenv(cfg, tree.path)
    fixes = load_fixes(cfg)
    head = tree.repo.rev("HEAD") or tree.head
    by_fix = reds(tree, fixes, head)
    targets = [
        t for f in fixes.fixes for t in focused_targets(tree, fixes, f, head=head)
    ]
    targets = list(dict.fromkeys(targets))
    extra = list(a.pytest_args)
    plan = (by_fix, targets, list(fixes.related_suites))
    opts = ["--related", "--parallel", a.parallel]
    opts += ["--", *extra] if extra else []
    load_before = os.getloadavg()
    with (
        tempfile.TemporaryDirectory(prefix="rg-bench-") as tmp,
        tree.repo.worktree("HEAD", "bench") as wt,
    ):
        out = Path(tmp) / "reports"  # replaced by each run (a run folder)
        junit = Path(tmp) / "recipe"
        junit.mkdir()
        modes: dict[str, Callable[[], float]] = {
            MANUAL: lambda: manual(wt, env, plan, extra, junit),
            TOOLKIT: lambda: toolkit(cfg, tree, ["--fresh", *opts], out, cached=False),
            CACHED: lambda: toolkit(cfg, tree, opts, out, cached=True),
        }
        timeline: list[Phase] = []
        each_round: list[Classes] = []

        def fresh() -> float:
            seconds = toolkit(cfg, tree, ["--fresh", *opts], out, cached=False)
            timeline[:] = phases(out)  # the last fresh run's, before it is replaced
            each_round.append(toolkit_classes(out))
            return seconds

        modes[TOOLKIT] = fresh
        times, cpu = _rounds(modes, max(a.repeat, 1))
        listed = ["git", "ls-files"]
        tracked = subprocess.run(
            listed, cwd=wt.path, check=True, capture_output=True, text=True
        ).stdout.splitlines()
        by_hand = recipe_classes(junit, by_fix, set(tracked))
    differ = [i + 1 for i, c in enumerate(each_round) if c != by_hand]
    load_after = os.getloadavg()
    loads = [", ".join(f"{x:.2f}" for x in la) for la in (load_before, load_after)]
    print(f"### Red/green vs the manual recipe ({os.cpu_count()} CPUs)\n")
    print(f"Load average before: {loads[0]}; after: {loads[1]}\n")
    shown = " ".join([*targets, *extra])
    kind = (
        f"{len(by_fix)} fix(es) with runtime patches, one red each"
        if by_fix
        else "GUARD ONLY (no runtime patches: no red runs; not a proof's number)"
    )
    print(f"Line: `{a.config}` ({cfg.upstream.label}): {kind}\n")
    print(f"Tests: `{shown}` + related suites, `--parallel {a.parallel}`\n")
    heads = ["Mode", "Runs", "Median wall s", "Wall s range", "Wall vs manual"]
    heads += ["Each round vs manual"]
    print(md_table([*heads, "Median CPU s", "CPU vs manual"], _rows(times, cpu)))
    _print_timeline(timeline, times[TOOLKIT][-1], cpu[TOOLKIT][-1])
    counts = ", ".join(
        f"{fix} {len(c['FAIL_TO_PASS'])}/{len(c['PASS_TO_PASS'])}"
        for fix, c in by_hand.items()
    )
    print(
        "Classification (FAIL_TO_PASS/PASS_TO_PASS per fix, from the recipe's "
        f"own red and green runs: {counts}): "
        + (
            f"rounds {differ} DIFFER from it"
            if differ
            else f"each of the {len(each_round)} rounds of forkkit gives the same"
        )
        + "\n"
    )
    if a.json:
        data = {"targets": targets, "pytest_args": extra, "wall": times, "cpu": cpu}
        data["load"] = {"before": list(load_before), "after": list(load_after)}
        data["classification_differs_in_rounds"] = differ
        a.json.write_text(json.dumps(data, indent=2) + "\n")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
