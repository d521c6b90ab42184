# SPDX-License-Identifier: Apache-2.0
"""``forkkit reconcile --with REF``: weigh our fix against a competing change.

The competitor becomes a commit on our base
(:mod:`forkkit.services.reconcile.competitor`); each side's tests then run on
each side's runtime (and ours on top of theirs), one cell at a time
(:mod:`forkkit.services.reconcile.cells`), and the result
(:class:`~forkkit.services.reconcile.result.ReconcileResult`) is a PR-ready
Markdown + JSON report. A reconcile writes into a fresh folder published as
``reports/reconcile/`` (or ``--out``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from forkkit.fork.fixes import focused_targets
from forkkit.fork.tree import ForkTree, materialize
from forkkit.line import Line
from forkkit.output.report import write_reports
from forkkit.patches.diff import Diff, parse_diff
from forkkit.patches.testids import target_file
from forkkit.services.reconcile.answers import (
    OURS_ON_THEIRS,
    RESEND_RUNTIMES,
    THEIRS_ON_OURS,
    Trees,
)
from forkkit.services.reconcile.cells import Bench, Workspace, run_cell
from forkkit.services.reconcile.competitor import (
    commit_theirs,
    diff_text,
    our_diff,
    parse_competitor,
    shown_ref,
    trust_release,
)
from forkkit.services.reconcile.doc import reconcile_doc
from forkkit.services.reconcile.matrix import build_matrix
from forkkit.services.reconcile.model import (
    STEM,
    THEIR_TESTS,
    Cell,
    Competitor,
    Layer,
    Options,
    Plan,
    Release,
    Runtime,
    Side,
    SideTests,
    classify_side,
    failure_kinds,
)
from forkkit.services.reconcile.overlap import (
    changed_test_modules,
    compute_overlap,
    merge_targets,
    touched_tests,
)
from forkkit.services.reconcile.render import render_markdown
from forkkit.services.reconcile.resend import (
    build_and_resend,
    describe_setup,
    preset_options,
    script_runner,
)
from forkkit.services.reconcile.result import ReconcileResult
from forkkit.testing.cache import ResultCache
from forkkit.testing.env import ensure_testenv
from forkkit.vcs import Repo, combine


@dataclass(frozen=True)
class Column:
    """A runtime column: a root commit plus runtime layers, and the test
    layers each side adds there (none where the root already has them)."""

    runtime: Runtime
    root: str
    layers: tuple[Layer, ...]
    tests: dict[str, tuple[Layer, ...]]


def _layers(
    repo: Repo, change: tuple[str, str], diff: Diff, *, side: Side
) -> tuple[Layer, Layer]:
    """A side's change (base, head) as its runtime layer (applied whole) and
    its test layer (applied file by file)."""
    a, b = change
    who = "our" if side == "ours" else "their"

    def layer(paths: tuple[str, ...], name: str, per_file: bool) -> Layer:
        parts = tuple((p, diff_text(repo, a, b, paths=[p])) for p in paths)
        text = "".join(t for _, t in parts)
        parsed = parse_diff(text, name) if text.strip() else None
        return Layer(name, side, parts, parsed, per_file)

    return (
        layer(diff.runtime_paths, f"{who} runtime", False),
        layer(diff.test_paths, f"{who} tests", True),
    )


def _their_targets(
    repo: Repo, change: tuple[str, str], theirs: Diff, *, ours: Diff, which: str
) -> tuple[str, ...]:
    """Their tests as pytest targets, as ``--their-tests`` asks (THEIR_TESTS)."""
    if which == "files":
        return changed_test_modules(theirs)
    base, head = change
    tsrc = {p: combine.show_text(repo, base, p) for p in theirs.test_paths}
    nsrc = {p: combine.show_text(repo, head, p) for p in theirs.test_paths}
    targets = touched_tests(theirs, tsrc, nsrc)
    if which == "shared":
        mine = set(ours.test_paths)
        targets = tuple(t for t in targets if target_file(t) in mine)
    return targets


@dataclass(frozen=True)
class Sides:
    """Both changes as commits on our base, with their diffs and test targets."""

    base: str
    ours_head: str
    theirs_head: str
    ours: Diff
    theirs: Diff
    our_targets: tuple[str, ...]
    their_targets: tuple[str, ...]
    release: Release | None
    notes: tuple[str, ...]


def _sides(
    line: Line, comp: Competitor, *, opts: Options, fork: ForkTree, ws: Workspace
) -> Sides:
    """Build the competitor's commit on our base; parse both diffs."""
    repo, base, ours_head = fork.repo, fork.base, fork.head
    ours = our_diff(repo, base, ours_head)
    base_src = {p: combine.show_text(repo, base, p) for p in ours.paths}
    new_src = {p: combine.show_text(repo, ours_head, p) for p in ours.test_paths}
    fixes = line.fixes
    whole = fixes.one()
    focused = focused_targets(fork, fixes, whole, head=ours_head)
    our_targets = merge_targets(focused, touched_tests(ours, base_src, new_src))
    theirs_head, release, notes = commit_theirs(
        line, comp, opts=opts, fork=fork, ws=ws, ours=ours
    )
    theirs = parse_diff(diff_text(repo, base, theirs_head, paths=["."]), comp.ref)
    their_targets = _their_targets(
        repo, (base, theirs_head), theirs, ours=ours, which=opts.their_tests
    )
    return Sides(
        base,
        ours_head,
        theirs_head,
        ours,
        theirs,
        our_targets,
        their_targets,
        release,
        notes,
    )


def _columns(
    repo: Repo, s: Sides, *, base_label: str, their_tree: bool
) -> tuple[list[Column], list[str]]:
    """Every runtime column, and notes on how they are built."""
    o_rt, o_t = _layers(repo, (s.base, s.ours_head), s.ours, side="ours")
    t_rt, t_t = _layers(repo, (s.base, s.theirs_head), s.theirs, side="theirs")
    tree = f"{base_label} (our base)"
    on_base: dict[str, tuple[Layer, ...]] = {"ours": (o_t,), "theirs": (t_t,)}
    cols = [
        Column(Runtime("base", f"pristine {base_label}", tree), s.base, (), on_base),
        Column(
            Runtime("ours", "base + our runtime change", tree), s.base, (o_rt,), on_base
        ),
        Column(
            Runtime("theirs", "base + their runtime change", tree),
            s.base,
            (t_rt,),
            on_base,
        ),
        Column(
            Runtime(OURS_ON_THEIRS, "base + their runtime + ours on top", tree),
            s.base,
            (t_rt, o_rt),
            on_base,
        ),
        Column(
            Runtime(THEIRS_ON_OURS, "base + our runtime + theirs on top", tree),
            s.base,
            (o_rt, t_rt),
            on_base,
        ),
    ]
    if s.release is None or not their_tree:
        return cols, []
    return [*cols, *_release_columns(s.release, o_rt, o_t)], [
        f"Columns {s.release.key} and {s.release.key}+ours run in the whole "
        f"{s.release.label} tree: their tests as shipped (with their own helpers), "
        "our tests and our runtime change applied by 3-way merge. All columns use "
        f"the test venv of {base_label}."
    ]


def _release_columns(rel: Release, o_rt: Layer, o_t: Layer) -> list[Column]:
    """The release's pristine tree, and it with our runtime change."""
    ver, tree_b = rel.key, f"{rel.label} (their full tree)"
    # the release already holds their tests; ours are merged in
    in_release: dict[str, tuple[Layer, ...]] = {"ours": (o_t,), "theirs": ()}
    return [
        Column(
            Runtime(ver, f"pristine {rel.label}", tree_b), rel.commit, (), in_release
        ),
        Column(
            Runtime(f"{ver}+ours", f"{rel.label} + our runtime change", tree_b),
            rel.commit,
            (o_rt,),
            in_release,
        ),
    ]


def reconcile(
    line: Line, ref: str, opts: Options | None = None
) -> tuple[ReconcileResult, Path, Path]:
    """Run the whole comparison; return the result and the published reports.

    Everything a reconcile writes (reports, the layers it applied, JUnit files
    and logs) goes into a fresh folder, published whole as
    ``reports/reconcile/`` (or as ``--out``) however it ends.
    """
    opts = opts or Options()
    comp = parse_competitor(ref, line.upstream.name)
    if opts.resend:
        preset_options(opts.resend)  # an unknown preset fails before any work
    comp = trust_release(line, comp, opts=opts)  # so does an untrusted release
    with line.work.report_folder(STEM, out=opts.out_dir) as folder:
        result = _compare(line, comp, opts=opts, out=folder.path)
        write_reports(
            folder.path,
            STEM,
            markdown=render_markdown(result),
            report=reconcile_doc(result),
        )
    return result, folder.dest / f"{STEM}.md", folder.dest / f"{STEM}.json"


def _compare(
    line: Line, comp: Competitor, *, opts: Options, out: Path
) -> ReconcileResult:
    """Build both sides and every column, run every cell; the result."""
    fork = materialize(line.config, dest=line.work.reconcile_repo)
    repo = fork.repo
    with repo.worktree(fork.base, "reconcile") as wt:
        ws = Workspace(wt)
        sides = _sides(line, comp, opts=opts, fork=fork, ws=ws)
        shared = set(sides.ours.paths) | set(sides.theirs.paths)
        base_src = {p: combine.show_text(repo, sides.base, p) for p in shared}
        overlap = compute_overlap(sides.ours, sides.theirs, base_src)
        columns, notes = _columns(
            repo, sides, base_label=fork.upstream_label, their_tree=opts.their_tree
        )
        tests = _side_tests(sides, opts)
        env = ensure_testenv(line.config, fork.path)
        bench = Bench(
            ws=ws,
            env=env,
            out=out,
            overlap=overlap,
            cache=ResultCache(line.work.results, fresh=opts.fresh),
            pytest_args=opts.pytest_args,
            timeout=opts.timeout,
        )
        cells = _fill_cells(bench, tests, columns)
        trees = _resend(bench, columns, opts=opts)
    classified = tuple(classify_side(s, cells) for s in tests)
    runtimes = tuple(col.runtime for col in columns)
    fixes = line.fixes
    return ReconcileResult(
        title=fixes.title,
        fixes=tuple((f.id, f.runtime_files) for f in fixes.fixes),
        competitor=shown_ref(comp, line.root),
        competitor_kind=comp.kind,
        base_label=fork.upstream_label,
        ours=sides.ours,
        theirs=sides.theirs,
        overlap=overlap,
        sides=classified,
        runtimes=runtimes,
        cells=cells,
        matrix=build_matrix(runtimes, classified, cells),
        notes=(*sides.notes, *notes, *_cell_notes(cells, sides.release)),
        trees=trees,
    )


def _resend(bench: Bench, columns: list[Column], *, opts: Options) -> Trees:
    """Build base, ours, theirs and both stacks, and (``opts.resend``) run the
    resend reproduction in each: the result's fields that say so."""
    plans = [
        Plan("ours", col.runtime, col.root, col.layers, ())
        for col in columns
        if col.runtime.key in RESEND_RUNTIMES
    ]
    repro = (
        replace(preset_options(opts.resend), eagle_mode=opts.eagle_mode)
        if opts.resend
        else None
    )
    runner = script_runner(bench, repro) if repro else None
    builds, cells = build_and_resend(bench, plans, runner=runner, timeout=opts.timeout)
    return Trees(
        builds=builds,
        resend=cells,
        runtimes=tuple(p.runtime.key for p in plans) if repro else (),
        setup=describe_setup(opts.resend, repro) if repro else "",
    )


def _fill_cells(
    bench: Bench, tests: list[SideTests], columns: list[Column]
) -> dict[tuple[str, str], Cell]:
    """Every side that brings tests, on every column: ``(side, runtime)`` ->
    its cell."""
    cells: dict[tuple[str, str], Cell] = {}
    for side in tests:
        for col in columns:
            if not side.targets:
                continue
            layers = (*col.layers, *col.tests[side.side])
            plan = Plan(side.side, col.runtime, col.root, layers, side.targets)
            cells[(side.side, col.runtime.key)] = run_cell(bench, plan)
    return cells


def _side_tests(sides: Sides, opts: Options) -> list[SideTests]:
    """Each side's tests, and the runtimes they are classified on."""
    return [
        SideTests(
            "ours",
            "focused tests + tests our patches add/change",
            sides.our_targets,
            "base",
            "ours",
        ),
        SideTests(
            "theirs",
            THEIR_TESTS[opts.their_tests],
            sides.their_targets,
            "base",
            # a release's own runtime is the release: its files alone may
            # need more of it to import (column "theirs" shows that)
            sides.release.key if sides.release and opts.their_tree else "theirs",
        ),
    ]


def _cell_notes(
    cells: dict[tuple[str, str], Cell], release: Release | None
) -> list[str]:
    """Notes on reused runs and on their tests failing in their own tree."""
    notes: list[str] = []
    cached = sum(1 for c in cells.values() if c.cached and not c.reused)
    if cached:
        notes.append(
            f"{cached} cell(s) reused from earlier reconcile runs of the identical "
            "tree and pytest command (rerun all with --fresh)."
        )
    pristine = cells.get(("theirs", release.key)) if release else None
    kinds = failure_kinds(pristine) if pristine else {}
    if pristine and kinds:
        top = ", ".join(f"{k} x{n}" for k, n in list(kinds.items())[:3])
        notes.append(
            f"{sum(kinds.values())} of their own tests fail in pristine "
            f"{pristine.runtime} here ({top}): this environment (our base's test "
            "venv, no network) differs from theirs, so those tests say nothing "
            "about either change."
        )
    return notes
