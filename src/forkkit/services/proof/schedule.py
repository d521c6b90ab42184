# SPDX-License-Identifier: Apache-2.0
"""One schedule for every run of a line's proofs.

Each fix of a line is proven alone, but their runs are known up front:
every fix has its own pair, red and green, the same pytest invocation on two
trees (a guard: green only), and every fix's proof shares one related run
(the related suites on the fix). Proven one after another, each pair after
the first ran alone on one core while the other idled. :func:`run_ahead`
runs all of them first, on the free cores: the pairs go longest first onto
the least loaded core (LPT), then the related run, cut into test files
(:mod:`forkkit.testing.shards`), fills each core up to the same end as one
shard. Each core runs its jobs one after another. Durations are the test
files' last measured times.

Every run lands in the command's result cache, so each fix's proof then
reads its runs from there, as runs of this command (never "cached"), and
classifies exactly as it would have: a run is the same pytest run of the
same tree whoever starts it. A run that did not finish (a hang, a crash) is
not stored, but the command holds it, so its proof reads that very run
instead of waiting for the hang again.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from forkkit.errors import ForkkitError
from forkkit.fork.fixes import FixSet
from forkkit.fork.tree import ForkTree
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.patches.fixes import Fix
from forkkit.services.proof.packed import (
    CORES,
    as_whole,
    cutter,
    own_pair,
    packable_args,
    read_stand_ins,
    stand_ins,
)
from forkkit.services.proof.plan import ProofSpec, make_proof_spec
from forkkit.testing.cache import ResultCache
from forkkit.testing.env import TestEnv
from forkkit.testing.forkruns import ForkRuns, SuiteRun
from forkkit.testing.logged import side_by_side
from forkkit.testing.shards import Timings, assign, merged, unmeasured_weight, weigh

# What one pytest process costs before its first test (vLLM's imports): a
# job more on a core is this much longer than its tests' times say.
STARTUP = 8.0
AHEAD = "red_green_ahead"  # the scratch folder the runs write into


@dataclass(frozen=True)
class Job:
    """One fix's own pair of runs in the schedule (a guard: its green only)."""

    plan: ProofSpec
    seconds: float  # what it should take, start-up included

    @property
    def name(self) -> str:
        return self.plan.fix_id


def lanes(
    pairs: Sequence[Job],
    parts: Sequence[str],
    weights: dict[str, float],
    *,
    cores: int,
) -> tuple[list[list[Job]], list[tuple[str, ...]]]:
    """Each core's pairs (longest first onto the least loaded core) and the
    test files of the related run that fill it up (one shard per core,
    empty where a core is full already)."""
    load = [0.0] * cores
    out: list[list[Job]] = [[] for _ in range(cores)]
    for job in sorted(pairs, key=lambda j: -j.seconds):
        i = min(range(cores), key=lambda k: load[k])
        out[i].append(job)
        load[i] += job.seconds
    return out, assign(parts, weights, load=load)


def estimate(parts: Sequence[str], weights: dict[str, float], mean: float) -> float:
    """The seconds of one run of ``parts``: their times plus a start-up."""
    return STARTUP + sum(weights.get(p, mean) for p in parts)


def red_key(targets: Sequence[str]) -> str:
    """How the timings name a red run of ``targets`` (its last wall time)."""
    return "red " + " ".join(sorted(targets))


@dataclass(frozen=True)
class Ahead:
    """What :func:`run_ahead` needs of the command: the same settings every
    proof of it uses."""

    env: TestEnv
    cache: ResultCache
    timings: Timings
    pytest_args: tuple[str, ...] = ()
    timeout: float | None = None
    related: bool = True
    base: str | None = None
    # asked only when there is something to run: may runs go side by side?
    may_pack: Callable[[], bool] = lambda: True


def run_ahead(
    line: Line,
    tree: ForkTree,
    *,
    fixes: FixSet,
    chosen: Sequence[Fix],
    how: Ahead,
) -> bool:
    """Run every pair of ``chosen`` (red and green) and the related run into
    the command's result cache, packed onto the cores; nothing when there is
    nothing to pack (one run), a plan cannot be made (each proof says why),
    the pytest arguments do not act on each test alone, or ``may_pack`` says
    no. True when every one of those runs was in the cache already (nothing
    is left for the proofs to run)."""
    if not packable_args(how.pytest_args):
        return False
    try:
        plans = [
            make_proof_spec(
                line, tree, None, related=how.related, base=how.base, fixes=fixes, fix=f
            )
            for f in chosen
            if not f.untested  # declared without a test: nothing to run
        ]
    except ForkkitError:
        return False
    if not plans or len({p.suites for p in plans}) != 1:
        return False
    with line.work.scratch_folder(AHEAD) as folder:
        runs = ForkRuns(
            runtime_files=(),
            env=how.env,
            out_dir=folder,
            head=plans[0].head,
            pytest_args=how.pytest_args,
            timeout=how.timeout,
            cache=how.cache,
        )
        return _schedule(tree, plans, runs, timings=how.timings, may_pack=how.may_pack)


def _schedule(
    tree: ForkTree,
    plans: Sequence[ProofSpec],
    runs: ForkRuns,
    *,
    timings: Timings,
    may_pack: Callable[[], bool],
) -> bool:
    """ProofSpec the lanes from the measured times, run them, keep the whole run
    (True: every run was cached, nothing to do)."""
    head, related = plans[0].head, plans[0].suites
    cut = cutter(tree, head)
    weights = timings.load()
    held = not related or runs.has(tree, head, related, name="related")
    parts = [] if held else cut(related)
    reused = stand_ins(parts, plans)  # a fix's green runs them whole
    rest = [p for p in parts if p not in reused]
    pairs = _pairs_to_run(tree, plans, runs, parts=parts, weights=weights)
    if not pairs and not parts:
        return True
    if 2 * len(pairs) + min(len(rest), CORES) < 2 or not may_pack():
        return False  # one run at most: the proof runs it as it would
    by_core, shards = lanes(pairs, rest, weights, cores=CORES)
    say(
        f"{len(pairs)} fix(es)' red and green and {len(rest)} test file(s) of "
        f"the related run on {CORES} cores, longest first"
        + (f" ({len(reused)} more from the fixes' greens)" if reused else "")
    )
    done = side_by_side(
        [
            _lane(tree, runs, jobs=jobs, shard=shard, index=i)
            for i, (jobs, shard) in enumerate(zip(by_core, shards, strict=True))
        ],
        workers=CORES,
        name="ahead",
    )
    timings.update(
        {
            red_key(run.run.args): run.run.seconds
            for lane_reds, _ in done
            for run in lane_reds
            if run.report is not None and not run.cached
        }
    )
    got = [shard_run for _, shard_run in done if shard_run is not None]
    if not parts or len(got) != len([s for s in shards if s]):
        return False
    # after every lane's number: a lane with no shard leaves a gap, and a
    # stand-in named into it would write over that lane's neighbour's files
    first = len(shards) + 1
    got += read_stand_ins(tree, runs, reused, head=head, name="related", first=first)
    if all(as_whole(r) for r in got):
        whole = merged(got, name="related", targets=related, out_dir=runs.out_dir)
        runs.keep_whole(tree, head, related, run=whole)
        if whole.report is not None:
            timings.update(weigh(parts, whole.report))
    return False


def _pairs_to_run(
    tree: ForkTree,
    plans: Sequence[ProofSpec],
    runs: ForkRuns,
    *,
    parts: Sequence[str],
    weights: dict[str, float],
) -> list[Job]:
    """Each fix's pair not held whole by the cache, weighed by its red's
    last wall time (green takes about as long) or estimated from its test
    files' times."""
    cut = cutter(tree, plans[0].head)
    mean = unmeasured_weight(
        [*parts, *(t for p in plans for t in cut(p.targets))], weights
    )
    jobs = []
    for p in plans:
        one = weights.get(red_key(p.targets)) or estimate(cut(p.targets), weights, mean)
        own = _own(runs, p)
        held = own.held(tree, p.head, p.targets, name="green") and (
            p.guard or own.held(tree, p.base, p.targets, name="red")
        )
        if not held:
            jobs.append(Job(p, one * (1 if p.guard else 2)))
    return jobs


def _own(runs: ForkRuns, plan: ProofSpec) -> ForkRuns:
    """The settings of ``plan``'s runs: its own runtime files."""
    return dataclasses.replace(runs, runtime_files=plan.runtime)


Lane = tuple[list[SuiteRun], SuiteRun | None]  # a core's runs, and its shard


def _lane(
    tree: ForkTree,
    runs: ForkRuns,
    *,
    jobs: Sequence[Job],
    shard: tuple[str, ...],
    index: int,
) -> Callable[[threading.Event], Lane]:
    """One core's work: its fixes' pairs, then its shard of the related run."""

    def lane(cancel: threading.Event) -> Lane:
        done: list[SuiteRun] = []
        for job in jobs:
            fix = job.plan.fix_id
            red, green = own_pair(
                tree,
                job.plan,
                _own(runs, job.plan),
                cancel=cancel,
                names=(f"red-{fix}", f"green-{fix}"),
            )
            done += [red] if job.plan.guard else [red, green]
        if not shard:
            return done, None
        name = f"related-{index + 1}"
        return done, runs.run(tree, runs.head, shard, name=name, cancel=cancel)

    return lane
