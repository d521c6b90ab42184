# SPDX-License-Identifier: Apache-2.0
"""Build the base, ours, theirs and both stacks as trees, and run the CPU
resend reproduction (``forkkit repro``'s script) in each.

Each column is assembled from the pristine base commit plus runtime layers
(:func:`forkkit.services.reconcile.cells.assemble`), so every file either
side changes (the union of both sides' runtime files) is as the column
says: pristine on base, one side's on ours/theirs. Columns whose trees are
identical run the script once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.output.progress import say
from forkkit.services.reconcile.answers import ResendCell, StackBuild
from forkkit.services.reconcile.cells import Bench, assemble
from forkkit.services.reconcile.model import Cell, Plan
from forkkit.services.repro.model import PRESETS, ReproOptions
from forkkit.services.repro.run import SCRIPT, Runner, ScriptFailed, run_script


def preset_options(name: str) -> ReproOptions:
    """The repro preset ``name`` (one-line error naming the known ones)."""
    if name not in PRESETS:
        known = ", ".join(sorted(PRESETS))
        raise ForkkitError(f"--resend {name!r}: unknown preset; use one of: {known}")
    return PRESETS[name]


def describe_setup(name: str, opts: ReproOptions) -> str:
    """What the resend table simulates, in one line."""
    lens = ", ".join(f"{n:,}" for n in opts.prompt_lens)
    return (
        f"preset `{name}`: a {lens}-token prompt, attention blocks of "
        f"{opts.block_size} tokens, {opts.hash_block_size}-token hashes, MTP "
        f"{opts.num_spec} ({opts.accept} accepted per step), EAGLE mode "
        f"{opts.eagle_mode}, Mamba cache mode align; vLLM's real Scheduler and "
        "KVCacheManager on CPU, no weights"
    )


def script_runner(bench: Bench, opts: ReproOptions) -> Runner:
    """The resend script in the reconcile's test venv (tree on PYTHONPATH)."""
    return Runner(bench.env.python, SCRIPT, tuple(opts.script_args()), False, bench.env)


def build_and_resend(
    bench: Bench,
    plans: Sequence[Plan],
    *,
    runner: Runner | None,
    timeout: float | None,
) -> tuple[tuple[StackBuild, ...], tuple[ResendCell, ...]]:
    """Assemble each plan's runtime tree (tests are not needed) and, given a
    ``runner``, reproduce the resends in it; the builds and the cells."""
    builds: list[StackBuild] = []
    cells: list[ResendCell] = []
    by_tree: dict[str, ResendCell] = {}
    for plan in plans:
        key = plan.runtime.key
        done = assemble(bench, plan, name=f"resend-{key}")
        if isinstance(done, Cell):  # a runtime layer did not merge
            builds.append(StackBuild(key, conflict=done.conflict))
            cells.append(ResendCell(key, error="conflict: the tree cannot be built"))
            continue
        tree = bench.ws.tree_id()
        builds.append(StackBuild(key, tree=tree))
        if runner is None:
            continue
        if tree in by_tree:
            prev = by_tree[tree]
            say(f"resend on {key}: same tree as {prev.runtime}, not run again")
            error = f"same tree as {prev.runtime}: {prev.error}" if prev.error else ""
            cells.append(replace(prev, runtime=key, reused=prev.runtime, error=error))
            continue
        cell = _reproduce(bench, key=key, tree=tree, runner=runner, timeout=timeout)
        by_tree[tree] = cell
        cells.append(cell)
    return tuple(builds), tuple(cells)


def _reproduce(
    bench: Bench, *, key: str, tree: str, runner: Runner, timeout: float | None
) -> ResendCell:
    """One script run in the workspace as it stands; errors become the cell's."""
    out: Path = bench.out / "resend"
    try:
        run, command = run_script(
            runner,
            bench.ws.path,
            out_dir=out,
            name=key,
            timeout=timeout,
        )
    except ScriptFailed as exc:
        say(f"resend on {key}: not measured: {exc}")
        # the report names the log relative to its own folder
        error = f"{exc.log.relative_to(bench.out)}: {exc.why}"
        return ResendCell(key, tree=tree, error=error)
    except ForkkitError as exc:
        say(f"resend on {key}: not measured: {exc}")
        return ResendCell(key, tree=tree, error=str(exc))
    return ResendCell(key, run=run, tree=tree, command=command)
