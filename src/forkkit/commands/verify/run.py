# SPDX-License-Identifier: Apache-2.0
"""``forkkit verify REPORT.json``: replay a red/green report and compare.

The report must come from the pin and the series this fork.toml and patches/
select (refused in one line otherwise); the fork tree is rebuilt from them,
its trees checked against the report's, and the same tests rerun with
:func:`forkkit.services.proof.run.prove` (``fresh``: nothing from the result
cache). The replay's own report is published as ``reports/verify`` (or
``--out``), never over the report being verified.
"""

from __future__ import annotations

from pathlib import Path

from forkkit.commands.verify.model import (
    STEM,
    Current,
    ReplaySpec,
    VerifyResult,
    categories,
    differences,
    env_refusal,
    not_replayed,
    refusal,
    replay_spec,
    tree_refusal,
)
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.fixes import SERIES_ID, load_fixes
from forkkit.fork.seriesfiles import load_series
from forkkit.fork.tree import ForkTree, materialize
from forkkit.line import Line
from forkkit.output.progress import say
from forkkit.services.proof.doc import ProofDoc, proof_doc
from forkkit.services.proof.run import prove, resolve_parallel
from forkkit.testing.env import TestEnv, ensure_testenv, installed

__all__ = ["read_report", "verify"]


def read_report(path: Path) -> ProofDoc:
    """The red/green report; one-line errors otherwise."""
    return ProofDoc.read(
        path,
        hint="give a red_green.json (forkkit red-green writes "
        "<workdir>/reports/red_green/red_green.json)",
    )


def _current(cfg: ForkConfig, fix: str | None) -> Current:
    series = load_series(cfg.series_file, cfg.patches_dir)
    fixes = load_fixes(cfg, series)
    known = {f.id for f in fixes.fixes}
    if fix is not None and fix not in known and fix != SERIES_ID:
        raise ForkkitError(
            f"the report proves fix '{fix}', which fork.toml no longer declares "
            f"(fixes: {', '.join(sorted(known)) or 'none'}); nothing to replay it with"
        )
    unit = fixes.one(fix if fix in known else None)
    return Current(
        upstream=cfg.upstream.ident,
        patches=tuple(p.name for p in series.patches),
        runtime_files=unit.runtime_files,
        related_suites=fixes.related_suites,
        deselect=tuple(cfg.testenv.deselect),
    )


def _ready(
    cfg: ForkConfig, spec: ReplaySpec, *, report: Path, dest: Path | None
) -> tuple[ForkTree, TestEnv]:
    """The fork tree and test env to replay ``spec`` in; one line when the
    pin, the series, the trees or the test env are not the report's."""
    why = refusal(spec, _current(cfg, spec.fix))
    if why is None:
        tree = materialize(cfg, dest=dest)
        why = tree_refusal(
            spec, base_tree=tree.base_tree, head_tree=tree.repo.tree(tree.head)
        )
    if why is None:
        env = ensure_testenv(cfg, tree.path)
        why = env_refusal(spec, packages=installed(env.python))
    if why is not None:
        raise ForkkitError(
            f"{report}: {why}; replay it with the fork.toml, patches/ and test env "
            "it was made with, or run forkkit red-green again"
        )
    return tree, env


def verify(
    cfg: ForkConfig,
    report: Path,
    *,
    dest: Path | None = None,
    out_dir: Path | None = None,
    timeout: float | None = None,
    stream: bool = True,
) -> VerifyResult:
    """Rebuild the report's trees, rerun its tests, list every difference."""
    doc = read_report(report)
    try:
        spec = replay_spec(doc, str(report))
    except ValueError as exc:
        raise ForkkitError(str(exc)) from None
    tree, env = _ready(cfg, spec, report=report, dest=dest)
    out = out_dir or cfg.work.report_dir(STEM)
    if out.resolve() == report.resolve().parent:
        raise ForkkitError(
            f"{out}: the report's own folder; the replay would replace it, "
            "pick another --out"
        )
    say(f"replaying {report}: {len(spec.tests)} target(s), nothing from the cache")
    result = prove(
        Line.of(cfg),
        tree,
        tests=list(spec.tests),
        pytest_args=spec.pytest_args,
        related=bool(spec.related_suites),
        out_dir=out,
        parallel=resolve_parallel("auto"),
        timeout=timeout,
        stream=stream,
        fresh=True,
        base=spec.red_base,
        env=env,
        fix=spec.fix if spec.fix in {f.id for f in load_fixes(cfg).fixes} else None,
    )
    fresh = proof_doc(result)
    return VerifyResult(
        report=str(report),
        tests=len(categories(doc)),
        differences=tuple(differences(doc, fresh)),
        skipped=not_replayed(doc, fresh),
    )
