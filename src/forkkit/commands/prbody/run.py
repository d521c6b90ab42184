# SPDX-License-Identifier: Apache-2.0
"""``forkkit pr-body``: read the reports, render the PR description.

The red/green report is required; repro and reconcile are read when present
(at their default place) or when given. Nothing is written but ``--out``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from forkkit.commands.prbody.model import PrInputs
from forkkit.commands.prbody.render import render_markdown
from forkkit.commands.prbody.render_untested import render_untested
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.fixes import FixSet, load_fixes
from forkkit.fork.seriesfiles import read_retired
from forkkit.output.progress import say
from forkkit.output.report import Report
from forkkit.patches.fixes import Fix
from forkkit.patches.retired import RETIRED_FILE
from forkkit.services.proof.doc import ProofDoc
from forkkit.services.rebase.doc import RebaseDoc
from forkkit.services.reconcile.doc import ReconcileDoc
from forkkit.services.repro.doc import ReproDoc

R = TypeVar("R", bound=Report)
# a trailer line: Signed-off-by, Co-authored-by, Forkkit-Fix, ...
_TRAILER = re.compile(r"^[A-Z][A-Za-z0-9-]*-[A-Za-z0-9-]+: \S")
__all__ = ["ReportPaths", "pr_body", "write_body"]


@dataclass(frozen=True)
class ReportPaths:
    """Where the reports are (None: the default place in the workdir)."""

    red_green: Path | None = None
    fix: str | None = None  # the fix the PR is (None: the series' only fix)
    repro: Path | None = None
    reconcile: Path | None = None
    rebase: Path | None = None


def _optional(given: Path | None, default: Path, cls: type[R]) -> R | None:
    """A report given on the command line must exist; the default may not."""
    if given is None and not default.is_file():
        return None
    hint = f"run forkkit {cls.DOC.what.split()[0]} first"
    return cls.read(given or default, hint=hint)


def _rebase(cfg: ForkConfig, given: Path | None) -> RebaseDoc | None:
    """The rebase report; the default one only when made from the current pin
    (an older one speaks of another series)."""
    default = cfg.work.reports / "rebase" / "rebase.json"
    doc = _optional(given, default, RebaseDoc)
    if given is None and doc is not None and doc.old != cfg.upstream.label:
        return None
    return doc


def _of_pin(made_on: str, *, label: str, what: Path) -> bool:
    """Whether a default report was made on the proof's pin; one made on
    another is left out (said once): its numbers are of another upstream."""
    if made_on in ("", label):
        return True
    say(f"left out {what}: made on {made_on}, not {label}; run it again")
    return False


def _fix(fixes: FixSet, fid: str | None) -> Fix:
    """The fix the PR is: ``--fix``, or the series' only one."""
    if fid is not None:
        return fixes.get(fid)
    found = fixes.pick(None)
    if len(found) > 1:
        ids = ", ".join(f.id for f in found)
        raise ForkkitError(
            f"{fixes.config}: {len(found)} fixes ({ids}); a PR is one fix: "
            "name it with 'forkkit pr-body --fix ID'"
        )
    return found[0]


def _stale(cfg: ForkConfig, doc: ProofDoc, *, fixes: FixSet, fix: Fix) -> str | None:
    """Why the report is not of this checkout's pin, series and fix."""
    if doc.upstream.ident != cfg.upstream.ident:
        pin = cfg.upstream.label
        return f"made on another pin ({doc.upstream.label}; fork.toml pins {pin})"
    names = tuple(p.name for p in fixes.patches)
    if tuple(p.name for p in doc.patches) != names:
        return "made from another series than patches/ holds now"
    if doc.fix is None or doc.fix.id != fix.id:
        return f"not a report of fix '{fix.id}'"
    if doc.fix.patches != fix.patches:
        return f"fix '{fix.id}' had other patches then ({', '.join(doc.fix.patches)})"
    if doc.fix.patch_sha256 and doc.fix.patch_sha256 != fix.patch_sha256:
        return f"fix '{fix.id}''s patches changed since (their sha256 differ)"
    return None


def _proof(cfg: ForkConfig, paths: ReportPaths) -> tuple[ProofDoc, Fix, FixSet]:
    """The fix's red/green report, refused (one line) when it is stale."""
    fixes = load_fixes(cfg)
    fix = _fix(fixes, paths.fix)
    path = paths.red_green or cfg.work.proof_report(fix.id)
    doc = ProofDoc.read(
        path,
        hint=f"run 'forkkit red-green --fix {fix.id}' first, or give "
        "'forkkit pr-body --red-green FILE'",
    )
    why = _stale(cfg, doc, fixes=fixes, fix=fix)
    if why:
        raise ForkkitError(
            f"{path}: {why}; run 'forkkit red-green --fix {fix.id}' again"
        )
    return doc, fix, fixes


def _description(fixes: FixSet, fix: Fix) -> str:
    """The fix's first patch's message, without its trailers."""
    body = fixes.patch(fix.patches[0]).message
    kept = [line for line in body.splitlines() if not _TRAILER.match(line)]
    return "\n".join(kept).strip()


def pr_body(cfg: ForkConfig, paths: ReportPaths) -> str:
    """The PR description in Markdown, with no local absolute path in it."""
    reports = cfg.work.reports
    roots = {
        str(cfg.work.root.absolute()): "WORKDIR",
        str(cfg.root.absolute()): ".",
        str(Path.home()): "~",
    }
    fixes = load_fixes(cfg)
    untested = _fix(fixes, paths.fix)
    if untested.untested and paths.red_green is None:
        purpose = _description(fixes, untested)
        return render_untested(
            untested, purpose=purpose, upstream=cfg.upstream.label, roots=roots
        )
    red_green, fix, fixes = _proof(cfg, paths)
    fork = red_green.fork_path
    roots |= {str(fork): "FORK"} if fork else {}
    label = red_green.upstream.label or cfg.upstream.label
    shown = {s: (reports / s / f"{s}.json") for s in ("repro", "reconcile")}
    repro = _optional(paths.repro, shown["repro"], ReproDoc)
    if repro and not paths.repro:
        where = shown["repro"].relative_to(cfg.work.root)
        repro = repro if _of_pin(repro.upstream, label=label, what=where) else None
    reconcile = _optional(paths.reconcile, shown["reconcile"], ReconcileDoc)
    if reconcile and not paths.reconcile:
        where = shown["reconcile"].relative_to(cfg.work.root)
        keep = _of_pin(reconcile.base, label=label, what=where)
        reconcile = reconcile if keep else None
    inputs = PrInputs(
        title=fix.title,
        purpose=_description(fixes, fix),
        red_green=red_green,
        repro=repro,
        reconcile=reconcile,
        rebase=_rebase(cfg, paths.rebase),
        retired=read_retired(cfg.patches_dir / RETIRED_FILE),
        roots=roots,
        own_suites=fix.related_suites,
    )
    return render_markdown(inputs)


def check_output_file(out: Path) -> None:
    """Fail in one line, before any work, when ``out`` cannot be a file."""
    if out.is_dir():
        raise ForkkitError(f"{out}: a folder; give --output a file name")
    parent = out.absolute().parent
    if not parent.is_dir():
        raise ForkkitError(
            f"{out}: {parent} is not a folder; give --output a file in a folder"
        )


def write_body(text: str, out: Path) -> None:
    """Write the description to ``out`` (one-line error when it cannot)."""
    try:
        out.write_text(text)
    except OSError as exc:
        raise ForkkitError(
            f"{out}: cannot write the PR description ({exc.strerror or exc})"
        ) from None
