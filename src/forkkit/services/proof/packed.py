# SPDX-License-Identifier: Apache-2.0
"""Red and the run on the fix packed onto two cores.

The run on the fix (the related suites plus the focused tests) is most of a
proof. With two cores free it is cut into two shards by test file
(:mod:`forkkit.testing.shards`), packed by each file's last measured time:
one core runs red and then the first shard, the other the second shard. The
shards' JUnit XML is merged into the one run they split, which the result
cache keeps as the whole run, so an unchanged rerun is one lookup however it
was packed. Every test runs in a shard exactly as in the whole run; only
which process runs which file differs.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence

from forkkit.fork.tree import ForkTree
from forkkit.output.progress import say
from forkkit.pin import is_commit_id
from forkkit.services.proof.model import STEM
from forkkit.services.proof.plan import Plan
from forkkit.testing.forkruns import ForkRuns, SuiteRun
from forkkit.testing.logged import side_by_side
from forkkit.testing.shards import (
    Timings,
    merged,
    split,
    units,
    unmeasured_weight,
    weigh,
)
from forkkit.workdir import published_path

CORES = 2


# pytest options that act on each test alone: a shard runs them as the whole
# run would. Any other (-x, --maxfail, --ignore, -c, a plugin...) runs whole.
_FLAGS = frozenset({"-q", "-qq", "-v", "-vv", "-vvv", "-s", "--disable-warnings"})
_WITH_VALUE = ("-k", "-m", "-W", "--deselect", "-p")  # -p: only no:NAME


def packable_args(args: Sequence[str]) -> bool:
    """Whether every pytest argument acts on each test alone."""
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in _FLAGS or arg.startswith("--tb="):
            continue
        if arg.startswith("-r") and arg[2:].isalpha():
            continue
        value = _value(arg, rest)
        if value is None or (arg.startswith("-p") and not value.startswith("no:")):
            return False
    return True


def _value(arg: str, rest: list[str]) -> str | None:
    """The value of an option of :data:`_WITH_VALUE` (taken from ``rest``
    when it is the next argument); None for any other argument."""
    for opt in _WITH_VALUE:
        if arg == opt:
            return rest.pop(0) if rest else None
        if arg.startswith(f"{opt}="):
            return arg[len(opt) + 1 :]
        if len(opt) == 2 and arg.startswith(opt) and len(arg) > 2:
            return arg[2:]
    return None


def cutter(tree: ForkTree, head: str) -> Callable[[Sequence[str]], list[str]]:
    """Cuts targets into test files where collection allows it, from one
    listing of ``head``'s tree (however many target lists it cuts; one per
    process for a commit id, whose content never changes)."""
    repo = tree.repo
    key = (str(repo.path), head)
    if key in _CUTTERS:
        return _CUTTERS[key]
    entries = repo.ls_tree_modes(head, [])
    files = frozenset(p for p, (mode, _) in entries.items() if mode.startswith("100"))
    special = frozenset(entries) - files

    @functools.cache
    def read(path: str) -> str | None:
        mode, oid = entries.get(path, ("", ""))
        if not oid or mode == "160000":  # missing, or a submodule's commit
            return None
        return repo.read_blob(oid).decode(errors="replace")

    def cut(targets: Sequence[str]) -> list[str]:
        return units(targets, files=files, read=read, special=special)

    if is_commit_id(head):
        _CUTTERS[key] = cut
    return cut


_CUTTERS: dict[tuple[str, str], Callable[[Sequence[str]], list[str]]] = {}


def packed(
    tree: ForkTree,
    plan: Plan,
    settings: ForkRuns,
    *,
    fix: tuple[str, Sequence[str]],
    timings: Timings,
) -> tuple[SuiteRun | None, SuiteRun] | None:
    """Red (None in guard mode) and the fix run as two packed shards; None
    when the fix run cannot be split or the cache holds it whole."""
    name, tests = fix
    if not packable_args(settings.pytest_args):
        return None
    cut = cutter(tree, plan.head)
    parts = cut(tests)
    if len(parts) < CORES or settings.has(tree, plan.head, tests, name=name):
        return None
    weights = timings.load()
    mean = unmeasured_weight(parts, weights)
    red_load = (
        0.0 if plan.guard else sum(weights.get(p, mean) for p in cut(plan.targets))
    )
    shards = split(parts, weights, n=CORES, preload=(red_load, 0.0))
    if len(shards) < CORES:
        return None
    say(
        f"{name}: {len(parts)} test files in {len(shards)} shards on "
        f"{CORES} cores" + ("" if plan.guard else ", red first on the first")
    )
    red, runs = _run_shards(tree, plan, settings, name=name, shards=shards)
    odd = [r.name for r in runs if not as_whole(r)]
    if odd:  # the whole run might have stopped at collection: run it whole
        say(f"{name}: {', '.join(odd)} did not run to the end; running it whole")
        return None
    whole = merged(runs, name=name, targets=tests, out_dir=settings.out_dir)
    settings.keep_whole(tree, plan.head, tests, run=whole)
    if whole.report is not None and not whole.cached:
        timings.update(weigh(parts, whole.report))
    return red, whole


def as_whole(run: SuiteRun) -> bool:
    """A shard ran as it would in the whole run: it finished, collected every
    module (the whole run stops after a collection error), exited 0, 1 or 5."""
    return (
        run.report is not None
        and not run.problem
        and not run.report.collection_errors
        and run.run.returncode in (0, 1, 5)
    )


def record(tree: ForkTree, head: str, run: SuiteRun, *, timings: Timings) -> None:
    """Keep the test files' times of a fresh whole run for the next split."""
    if run.report is not None and not run.cached:
        timings.update(weigh(cutter(tree, head)(run.run.args), run.report))


def _run_shards(
    tree: ForkTree,
    plan: Plan,
    settings: ForkRuns,
    *,
    name: str,
    shards: list[tuple[str, ...]],
) -> tuple[SuiteRun | None, list[SuiteRun]]:
    """One thread per core: red then shard 1 on the first, shard 2 on the
    other; a failure or a signal stops every run (the threads never see one)."""

    def first(cancel: threading.Event) -> tuple[SuiteRun | None, SuiteRun]:
        red = None
        if not plan.guard:
            red = settings.run(
                tree, plan.base, plan.targets, name=f"{STEM}_red", cancel=cancel
            )
        return red, shard(0, cancel)

    def shard(i: int, cancel: threading.Event) -> SuiteRun:
        # each shard in a checkout of its own
        return settings.run(
            tree, plan.head, shards[i], name=f"{name}-{i + 1}", cancel=cancel
        )

    (red, a), (_, b) = side_by_side(
        [first, lambda cancel: (None, shard(1, cancel))], workers=CORES, name="packed"
    )
    return red, [a, b]


def red_and_fix(
    tree: ForkTree, plan: Plan, settings: ForkRuns, *, parallel: bool, timings: Timings
) -> tuple[SuiteRun, SuiteRun]:
    """Red (base runtime, focused tests) and the one run on the fix (the
    related suites plus the focused tests; the focused tests alone with
    ``--no-related``): one after the other, or packed onto both cores."""
    fix_tests = plan.fix_run
    fix_name = f"{STEM}_green" if fix_tests == plan.targets else f"{STEM}_related"
    if plan.guard:
        say(
            f"guard: fix '{plan.fix_id}' carries only tests, run on "
            f"{tree.upstream_label} (red would run the same tree)"
        )
    fix = (fix_name, fix_tests)
    if parallel:
        done = packed(tree, plan, settings, fix=fix, timings=timings)
        if done is not None:
            return done[0] or done[1], done[1]
    red, fix_run = _unpacked(tree, plan, settings, fix=fix, parallel=parallel)
    record(tree, plan.head, fix_run, timings=timings)
    return red, fix_run


def _unpacked(
    tree: ForkTree,
    plan: Plan,
    settings: ForkRuns,
    *,
    fix: tuple[str, list[str] | tuple[str, ...]],
    parallel: bool,
) -> tuple[SuiteRun, SuiteRun]:
    """Red and the fix run whole: one after the other, or side by side."""
    fix_name, fix_tests = fix
    if plan.guard:
        fix_run = settings.run(tree, plan.head, fix_tests, name=fix_name)
        return fix_run, fix_run
    if not parallel:
        say(f"red: {len(plan.targets)} target(s) with runtime files from base")
        red = settings.run(tree, plan.base, plan.targets, name=f"{STEM}_red")
        say(f"fix: {', '.join(fix_tests)}")
        return red, settings.run(tree, plan.head, fix_tests, name=fix_name)
    say(f"red and the fix side by side (logs in {published_path(settings.out_dir)})")
    red, fix_run = side_by_side(
        [
            lambda cancel: settings.run(
                tree, plan.base, plan.targets, name=f"{STEM}_red", cancel=cancel
            ),
            lambda cancel: settings.run(
                tree, plan.head, fix_tests, name=fix_name, cancel=cancel
            ),
        ],
        workers=2,
        name="red-green",
    )
    return red, fix_run
