# SPDX-License-Identifier: Apache-2.0
"""``forkkit red-green``: every fix of a line proven alone, or every line."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

from forkkit.commands.redgreen.model import Request
from forkkit.config import ForkConfig, every_line
from forkkit.errors import ForkkitError
from forkkit.fork.fixes import FixSet
from forkkit.fork.tree import ForkTree, materialize
from forkkit.line import Line
from forkkit.output.report import LINES, write_reports
from forkkit.patches.fixes import Fix
from forkkit.process import end_children
from forkkit.services.proof.lines import (
    LINES_STEM,
    LinesDoc,
    line_doc,
    lines_of,
    render_lines,
)
from forkkit.services.proof.model import RedGreenResult, patch_commit
from forkkit.services.proof.run import project_timings, prove, resolve_parallel
from forkkit.services.proof.schedule import Ahead, run_ahead
from forkkit.services.proof.summary import (
    SUMMARY_STEM,
    Proven,
    SummaryDoc,
    prove_fixes,
    prove_one_fix,
    render_summary,
)
from forkkit.testing.cache import ResultCache
from forkkit.testing.env import Bench, TestEnv, ensure_testenv, prewarm
from forkkit.testing.forkruns import SuiteRun, clean_once, require_committed
from forkkit.testing.importdigest import warm
from forkkit.testing.shards import Timings
from forkkit.workdir import PROOF_STEM


def _base(req: Request, tree: ForkTree) -> str | None:
    """The revision ``--base`` or ``--base-patch`` names (None: neither)."""
    if req.base_patch is None:
        return req.base
    try:
        return patch_commit(tree.patch_commits, req.base_patch)[1]
    except ValueError as exc:
        raise ForkkitError(f"--base-patch {req.base_patch}: {exc}") from None


def _chosen(fixes: FixSet, req: Request) -> tuple[Fix, ...]:
    """The fixes to prove: ``--fix``'s, or all; ``--tests`` names one."""
    chosen = fixes.pick(req.fix)
    if req.tests and len(chosen) > 1:
        raise ForkkitError(
            f"--tests: the series has {len(chosen)} fixes "
            f"({', '.join(f.id for f in chosen)}); name the one they prove with --fix"
        )
    return chosen


def _bench_places(
    line: Line, tree: ForkTree, req: Request
) -> tuple[Path | None, Timings, Callable[[], TestEnv]]:
    """Where the proofs are published, their timings kept, and the test
    environment (made on first use): a bench's are its own
    (``reports/red_green@NAME``), so the CPU proof's stay as they are."""
    name, bench = req.bench, Bench(name=req.bench, python=req.python)
    env = functools.cache(lambda: ensure_testenv(line.config, tree.path, bench=bench))
    if not name:
        return req.out, project_timings(line, tree), env
    out = req.out or line.work.report_dir(f"{PROOF_STEM}@{name}")
    path = line.work.timings_file(f"{tree.upstream_label}@{name}")
    return out, Timings(path), env


def _untested(fixes: Sequence[Fix]) -> bool:
    """Every fix declared without a test: nothing runs, no venv is built."""
    return all(f.untested for f in fixes)


def prove_line(cfg: ForkConfig, req: Request) -> Proven:
    """Every fix of ``cfg``'s line proven alone (or ``--fix``'s)."""
    line = Line.of(cfg)
    chosen = _chosen(line.fixes, req)
    if req.python is None:
        prewarm(cfg, req.dest or cfg.work.fork)  # the venv's digest, meanwhile
    tree = materialize(cfg, dest=req.dest)
    out, timings, env = _bench_places(line, tree, req)
    base = _base(req, tree)
    # sampled (0.2 s) only when something is to run: a rerun never waits
    parallel = functools.cache(functools.partial(resolve_parallel, req.parallel))
    nothing_runs = False  # every run of every fix is in the cache already
    cache = ResultCache(cfg.work.results, fresh=req.fresh)  # one for every fix

    def ahead() -> None:  # every fix's runs packed onto the cores at once
        nonlocal nothing_runs
        # before the venv: a tree that cannot be proven never waits for a build
        require_committed(tree.repo, "red-green")
        how = Ahead(
            env=env(),
            cache=cache,
            timings=timings,
            pytest_args=tuple(req.pytest_args),
            timeout=req.timeout,
            related=req.related,
            base=base,
            may_pack=parallel,
        )
        nothing_runs = run_ahead(line, tree, fixes=line.fixes, chosen=chosen, how=how)

    packs = not (req.tests or req.parallel == "off" or _untested(chosen))
    more = req.checks.hunks or req.checks.repeat > 0  # runs beyond the ahead's

    def prove_one(fix: Fix, out: Path) -> RedGreenResult[SuiteRun]:
        return prove(
            line,
            tree,
            tests=list(req.tests) if req.tests else None,
            pytest_args=req.pytest_args,
            related=req.related,
            out_dir=out,
            parallel=(more or not nothing_runs) and parallel(),  # if any runs
            timeout=req.timeout,
            fresh=req.fresh,
            checks=req.checks,
            base=base,
            fix=fix.id,
            cache=cache,
            env=env(),
            timings=timings,
        )

    with clean_once():  # the fork tree's uncommitted-changes check, once
        if req.fix is not None:  # that fix's report alone is replaced
            return prove_one_fix(
                line, chosen[0], line.fixes.fixes, out=out, prove_one=prove_one
            )
        return prove_fixes(
            line, chosen, out=out, prove_one=prove_one, ahead=ahead if packs else None
        )


@dataclass(frozen=True)
class Lines:
    """Every line proven: the table and each line's proof."""

    doc: LinesDoc
    proven: tuple[Proven, ...]
    folder: Path
    summaries: tuple[SummaryDoc, ...] = ()  # each line's, in the table's order

    @property
    def markdown(self) -> str:
        return "\n\n".join(
            [render_lines(self.doc), *(render_summary(s) for s in self.summaries)]
        )


def prove_all_lines(cfg: ForkConfig, req: Request) -> Lines:
    """Each line (this one, then ``[line] also``) proven as ``red-green``
    proves one; the table of every fix on every line in ``reports/lines``."""
    one_line = (req.fix, req.tests, req.out, req.dest, req.base, req.base_patch)
    if any(one_line) or req.python is not None:
        raise ForkkitError(
            "--all-lines proves every fix of every line: drop --fix, --tests, "
            "--out, --dest, --base and --python (use them on one line's config)"
        )
    configs = every_line(cfg)
    stop = threading.Event()
    ready = _prepared_in_the_background(configs[1:], stop=stop)
    proven: list[Proven] = []
    try:
        for i, line in enumerate(configs):
            if i:
                ready[i - 1].result()  # its error, if any, is this line's
            proven.append(prove_line(line, req))
    except BaseException:  # an error, Ctrl-C or SIGTERM: no build goes on
        stop.set()
        if not all(f.done() for f in ready):
            end_children()  # the background's git, pip or uv
        raise
    found = [(p.summary, p.folder / f"{SUMMARY_STEM}.md") for p in proven]
    return _lines_table(cfg, found, proven=tuple(proven))


def _prepared_in_the_background(
    configs: Sequence[ForkConfig], *, stop: threading.Event
) -> list[Future[None]]:
    """The later lines' fork trees and test venvs (and the venvs' import
    digests), made one after the other on a background thread while the
    first line is proven: a venv build waits mostly on the network and the
    disk, which the runs leave free. Each line waits for its own before it
    is proven, and its proof materializes and checks them again (both
    instant when nothing changed); an error is raised in that line's turn.
    A set ``stop`` starts no further line (the caller kills what runs)."""
    futures: list[Future[None]] = [Future() for _ in configs]

    def prepare() -> None:
        for line, done in zip(configs, futures, strict=True):
            if stop.is_set():
                done.set_exception(ForkkitError("stopped"))
                continue
            try:
                tree = materialize(line)
                _go_on(stop)
                env = ensure_testenv(line, tree.path)
                _go_on(stop)
                warm(env.python, env.store).result()
                done.set_result(None)
            except BaseException as exc:  # handed to the line's turn
                done.set_exception(exc)

    if configs:
        threading.Thread(target=prepare, name="lines-ahead", daemon=True).start()
    return futures


def _go_on(stop: threading.Event) -> None:
    """Between two steps of the background's preparation: stop if asked."""
    if stop.is_set():
        raise ForkkitError("stopped")


def collect_lines(cfg: ForkConfig, source: Path) -> Lines:
    """The table of every line from the line summaries under ``source``
    (each CI job of the matrix proves one line and uploads its reports)."""
    found: list[tuple[SummaryDoc, Path]] = []
    for path in sorted(source.rglob(f"{SUMMARY_STEM}.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ForkkitError(
                f"{path}: not readable JSON ({exc}); rerun its job"
            ) from None
        if isinstance(data, dict) and data.get("schema") == LINES.schema:
            continue  # a table of lines, not a line
        try:
            found.append(
                (SummaryDoc.of(data, where=str(path)), path.with_suffix(".md"))
            )
        except ValueError as exc:
            raise ForkkitError(str(exc)) from None
    if not found:
        raise ForkkitError(
            f"{source}: no red-green summary.json under it; download the line "
            "jobs' reports there first"
        )
    names = [doc.line or doc.upstream_label for doc, _ in found]
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice:
        raise ForkkitError(f"{source}: line {twice!r} has two summaries; keep one")
    return _lines_table(cfg, found, proven=())


def _lines_table(
    cfg: ForkConfig, found: list[tuple[SummaryDoc, Path]], *, proven: tuple[Proven, ...]
) -> Lines:
    """Write ``reports/lines``: a row per fix, a column per line."""
    with cfg.work.report_folder("lines") as folder:
        docs = [
            line_doc(
                doc.line or doc.upstream_label,
                doc,
                summary_file=md,
                folder=folder.dest,
            )
            for doc, md in found
        ]
        doc = lines_of(docs)
        write_reports(
            folder.path,
            LINES_STEM,
            markdown=render_lines(doc),
            report=doc,
        )
    summaries = tuple(d for d, _ in found)
    return Lines(doc=doc, proven=proven, folder=folder.dest, summaries=summaries)
