# SPDX-License-Identifier: Apache-2.0
"""A fix's own red and green, and the related run, packed onto two cores.

Red and green of a fix are the same pytest invocation (targets, arguments,
checkout path, JUnit path) one after the other, differing only in the tree
(:func:`own_pair`): what decides the fix's FAIL_TO_PASS is its own change and
nothing another fix's tests do at import. The related suites are a run of
their own on the fix that decides only PASS_TO_PASS regressions. With two
cores free the related run is cut into two shards by test file
(:mod:`forkkit.testing.shards`), packed by each file's last measured time:
one core runs the pair and then the first shard, the other the second
shard. The shards' JUnit XML is merged into the one run they split, which
the result cache keeps as the whole run, so an unchanged rerun is one lookup
however it was packed.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence

from forkkit.fork.tree import ForkTree
from forkkit.output.progress import say
from forkkit.pin import is_commit_id
from forkkit.services.proof.model import STEM
from forkkit.services.proof.plan import ProofSpec
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
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    related: tuple[str, Sequence[str]],
    timings: Timings,
) -> tuple[tuple[SuiteRun, SuiteRun], SuiteRun] | None:
    """The fix's red and green, and the related run as two packed shards
    (and the fix's green where it stands in for a file, :func:`stand_ins`);
    None when the related run cannot be split or the cache holds it whole."""
    name, tests = related
    if not packable_args(settings.pytest_args):
        return None
    cut = cutter(tree, plan.head)
    parts = cut(tests)
    if len(parts) < CORES or settings.has(tree, plan.head, tests, name=name):
        return None
    reused = stand_ins(parts, [plan])
    rest = [p for p in parts if p not in reused]
    weights = timings.load()
    mean = unmeasured_weight(parts, weights)
    own = sum(weights.get(p, mean) for p in cut(plan.targets))
    shards = split(rest, weights, n=CORES, preload=(own * (1 + (not plan.guard)), 0.0))
    if len(shards) < CORES - len(reused[:1]):  # a green stands in: one may do
        return None
    say(
        f"{name}: {len(rest)} test files in {len(shards)} shards on "
        f"{CORES} cores, the fix's own runs first on the first"
        + (f"; {len(reused)} file(s) from the fix's green" if reused else "")
    )
    own_runs, runs = _run_shards(tree, plan, settings, name=name, shards=shards)
    runs += read_stand_ins(
        tree, settings, reused, head=plan.head, name=name, first=len(runs) + 1
    )
    odd = [r.name for r in runs if not as_whole(r)]
    if odd:  # the whole run might have stopped at collection: run it whole
        say(f"{name}: {', '.join(odd)} did not run to the end; running it whole")
        return own_runs, settings.run(tree, plan.head, tests, name=name)
    whole = merged(runs, name=name, targets=tests, out_dir=settings.out_dir)
    settings.keep_whole(tree, plan.head, tests, run=whole)
    if whole.report is not None and not whole.cached:
        timings.update(weigh(parts, whole.report))
    return own_runs, whole


def stand_ins(parts: Sequence[str], plans: Sequence[ProofSpec]) -> list[str]:
    """The test files of the related run that a fix's green runs whole, alone
    (its targets are that one file), on the same tree: that very pytest run
    stands in for them in the related run, which is not run twice. What a
    shard promises holds for it: every test runs as in the whole run, only
    which process runs which file differs."""
    greens = {p.targets[0] for p in plans if len(p.targets) == 1}
    return [p for p in parts if p in greens]


def read_stand_ins(
    tree: ForkTree,
    settings: ForkRuns,
    units: Sequence[str],
    *,
    head: str,
    name: str,
    first: int,
) -> list[SuiteRun]:
    """The runs of ``units`` on ``head`` this command made already (the
    fixes' greens), named as the related run's parts ``NAME-FIRST``, ...;
    one not in the cache runs now, as any shard would."""
    return [
        settings.run(tree, head, (unit,), name=f"{name}-{first + i}")
        for i, unit in enumerate(units)
    ]


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


# a core's work: the fix's pair (on the first core only), then its shards
_Lane = tuple[tuple[SuiteRun, SuiteRun] | None, list[SuiteRun]]


def _run_shards(
    tree: ForkTree,
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    name: str,
    shards: list[tuple[str, ...]],
) -> tuple[tuple[SuiteRun, SuiteRun], list[SuiteRun]]:
    """One thread per core: red, green and (with two shards) shard 1 on the
    first, the last shard on the other; a failure or a signal stops every run
    (the threads never see one)."""
    lone = len(shards) == 1

    def first(cancel: threading.Event) -> _Lane:
        pair = own_pair(tree, plan, settings, cancel=cancel)
        return pair, [] if lone else [shard(0, cancel)]

    def last(cancel: threading.Event) -> _Lane:
        return None, [shard(len(shards) - 1, cancel)]

    def shard(i: int, cancel: threading.Event) -> SuiteRun:
        # each shard in a checkout of its own
        return settings.run(
            tree, plan.head, shards[i], name=f"{name}-{i + 1}", cancel=cancel
        )

    (own, a), (_, b) = side_by_side([first, last], workers=CORES, name="packed")
    assert own is not None
    return own, [*a, *b]


def own_pair(
    tree: ForkTree,
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    cancel: threading.Event | None = None,
    names: tuple[str, str] = (f"{STEM}_red", f"{STEM}_green"),
) -> tuple[SuiteRun, SuiteRun]:
    """The fix's red and green (their log names: ``names``): the same
    targets and arguments in the same place (checkout path, JUnit path), one
    after the other, so they differ only in the tree. They stand together:
    when the cache does not hold both, both run now. A guard's red is its
    green (no runtime change)."""
    red_name, green_name = names
    if plan.guard:
        green = settings.run(
            tree,
            plan.head,
            plan.targets,
            name=green_name,
            place=plan.place,
            cancel=cancel,
        )
        return green, green
    reuse = settings.held(
        tree, plan.base, plan.targets, name=red_name
    ) and settings.held(tree, plan.head, plan.targets, name=green_name)
    runs = [
        settings.run(
            tree,
            rev,
            plan.targets,
            name=n,
            place=plan.place,
            cancel=cancel,
            reuse=reuse,
        )
        for rev, n in ((plan.base, red_name), (plan.head, green_name))
    ]
    return runs[0], runs[1]


def proof_runs(
    tree: ForkTree,
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    parallel: bool,
    timings: Timings,
) -> tuple[SuiteRun, SuiteRun, SuiteRun | None]:
    """Red, green (the fix's own pair) and the related run (the related
    suites on the fix, None without them): one after the other, or the
    related run beside the pair, packed onto both cores."""
    if plan.guard:
        say(
            f"guard: fix '{plan.fix_id}' carries only tests, run on "
            f"{tree.upstream_label} (red would run the same tree)"
        )
    if not plan.suites:
        return (*own_pair(tree, plan, settings), None)
    related = (f"{STEM}_related", plan.suites)
    if parallel:
        done = packed(tree, plan, settings, related=related, timings=timings)
        if done is not None:
            return (*done[0], done[1])
    (red, green), rel = _unpacked(
        tree, plan, settings, related=related, parallel=parallel
    )
    record(tree, plan.head, rel, timings=timings)
    return red, green, rel


def _unpacked(
    tree: ForkTree,
    plan: ProofSpec,
    settings: ForkRuns,
    *,
    related: tuple[str, Sequence[str]],
    parallel: bool,
) -> tuple[tuple[SuiteRun, SuiteRun], SuiteRun]:
    """The pair and the related run whole: one after the other, or side by side."""
    name, tests = related
    if not parallel:
        say(f"red and green: {len(plan.targets)} target(s), then the related suites")
        first = own_pair(tree, plan, settings)
        return first, settings.run(tree, plan.head, tests, name=name)
    say(
        f"the fix's pair and the related suites side by side (logs in "
        f"{published_path(settings.out_dir)})"
    )

    def pair(cancel: threading.Event) -> tuple[SuiteRun, ...]:
        return own_pair(tree, plan, settings, cancel=cancel)

    def rel(cancel: threading.Event) -> tuple[SuiteRun, ...]:
        return (settings.run(tree, plan.head, tests, name=name, cancel=cancel),)

    jobs: list[Callable[[threading.Event], tuple[SuiteRun, ...]]] = [pair, rel]
    (red, green), (whole,) = side_by_side(jobs, workers=2, name="red-green")
    return (red, green), whole
