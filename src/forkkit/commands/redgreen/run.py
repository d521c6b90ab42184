# SPDX-License-Identifier: Apache-2.0
"""``forkkit red-green``: every fix of a line proven alone, or every line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from forkkit.commands.redgreen.model import Request
from forkkit.config import ForkConfig, load_config
from forkkit.errors import ForkkitError
from forkkit.fork.fixes import load_fixes
from forkkit.fork.tree import ForkTree, materialize
from forkkit.output.report import LINES, write_reports
from forkkit.patches.fixes import Fix
from forkkit.services.proof.lines import (
    LINES_STEM,
    LinesDoc,
    line_doc,
    lines_of,
    render_lines,
)
from forkkit.services.proof.model import RedGreenResult, patch_commit
from forkkit.services.proof.run import prove, resolve_parallel
from forkkit.services.proof.summary import (
    SUMMARY_STEM,
    Proven,
    prove_fixes,
    prove_one_fix,
    render_summary,
)
from forkkit.testing.cache import ResultCache
from forkkit.testing.suiterun import SuiteRun


def _base(req: Request, tree: ForkTree) -> str | None:
    """The revision ``--base`` or ``--base-patch`` names (None: neither)."""
    if req.base_patch is None:
        return req.base
    try:
        return patch_commit(tree.patch_commits, req.base_patch)[1]
    except ValueError as exc:
        raise ForkkitError(f"--base-patch {req.base_patch}: {exc}") from None


def prove_line(cfg: ForkConfig, req: Request) -> Proven:
    """Every fix of ``cfg``'s line proven alone (or ``--fix``'s)."""
    fixes = load_fixes(cfg)
    chosen = fixes.pick(req.fix)
    if req.tests and len(chosen) > 1:
        raise ForkkitError(
            f"--tests: the series has {len(chosen)} fixes "
            f"({', '.join(f.id for f in chosen)}); name the one they prove with --fix"
        )
    tree = materialize(cfg, dest=req.dest)
    base = _base(req, tree)
    parallel = resolve_parallel(req.parallel)
    # one cache for every fix: with --fresh, a run made now serves them all
    cache = ResultCache(cfg.work.results, fresh=req.fresh)

    def prove_one(fix: Fix, out: Path) -> RedGreenResult[SuiteRun]:
        return prove(
            cfg,
            tree,
            tests=list(req.tests) if req.tests else None,
            pytest_args=req.pytest_args,
            related=req.related,
            out_dir=out,
            parallel=parallel,
            timeout=req.timeout,
            fresh=req.fresh,
            checks=req.checks,
            base=base,
            fix=fix.id,
            fixes=fixes,
            cache=cache,
        )

    if req.fix is None:
        proven = prove_fixes(cfg, chosen, out=req.out, prove_one=prove_one)
    else:  # that fix's report alone is replaced; the summary is written again
        proven = prove_one_fix(
            cfg, chosen[0], fixes.fixes, out=req.out, prove_one=prove_one
        )
    return proven


@dataclass(frozen=True)
class Lines:
    """Every line proven: the table and each line's proof."""

    doc: LinesDoc
    proven: tuple[Proven, ...]
    folder: Path

    @property
    def markdown(self) -> str:
        return "\n\n".join(
            [render_lines(self.doc), *(render_summary(p.summary) for p in self.proven)]
        )


def prove_all_lines(cfg: ForkConfig, req: Request) -> Lines:
    """Each line (this one, then ``[line] also``) proven as ``red-green``
    proves one; the table of every fix on every line in ``reports/lines``."""
    if req.fix or req.tests or req.out or req.dest or req.base or req.base_patch:
        raise ForkkitError(
            "--all-lines proves every fix of every line: drop --fix, --tests, "
            "--out, --dest and --base (use them on one line's config)"
        )
    configs = [cfg, *(load_config(p) for p in cfg.also)]
    proven = [prove_line(c, req) for c in configs]
    with cfg.work.new_report_folder("lines") as folder:
        docs = [
            line_doc(
                c.line_label,
                p.summary,
                summary_file=p.folder / f"{SUMMARY_STEM}.md",
                folder=folder.dest,
            )
            for c, p in zip(configs, proven, strict=True)
        ]
        doc = lines_of(docs)
        write_reports(
            folder.path,
            LINES_STEM,
            markdown=render_lines(doc),
            data=doc.to_json(),
            doc=LINES,
        )
    return Lines(doc=doc, proven=tuple(proven), folder=folder.dest)
