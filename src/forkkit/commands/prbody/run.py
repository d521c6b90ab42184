# SPDX-License-Identifier: Apache-2.0
"""``forkkit pr-body``: read the reports, render the PR description.

The red/green report is required; repro and reconcile are read when present
(at their default place) or when given. Nothing is written but ``--out``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forkkit.commands.prbody.model import PrInputs
from forkkit.commands.prbody.render import render_markdown
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.seriesfiles import read_retired
from forkkit.output.progress import say
from forkkit.output.report import (
    PROOF,
    REBASE,
    RECONCILE,
    REPRO,
    DocType,
    read_report_json,
    read_typed,
)
from forkkit.patches.retired import RETIRED_FILE
from forkkit.services.proof.doc import ProofDoc

__all__ = ["ReportPaths", "pr_body", "write_body"]


@dataclass(frozen=True)
class ReportPaths:
    """Where the reports are (None: the default place in the workdir)."""

    red_green: Path | None = None
    repro: Path | None = None
    reconcile: Path | None = None
    rebase: Path | None = None


def _optional(
    given: Path | None, default: Path, *, doc: DocType
) -> dict[str, Any] | None:
    """A report given on the command line must exist; the default may not."""
    if given is None and not default.is_file():
        return None
    hint = f"run forkkit {doc.what.split()[0]} first"
    return read_report_json(given or default, doc=doc, hint=hint)


def _rebase(cfg: ForkConfig, given: Path | None) -> dict[str, Any] | None:
    """The rebase report; the default one only when made from the current pin
    (an older one speaks of another series)."""
    default = cfg.work.reports / "rebase" / "rebase.json"
    doc = _optional(given, default, doc=REBASE)
    if given is None and doc is not None and doc.get("old") != cfg.upstream.label:
        return None
    return doc


def _of_pin(
    doc: dict[str, Any] | None, *, key: str, label: str, what: Path
) -> dict[str, Any] | None:
    """A default report made on another pin than the proof's is left out
    (said once): its numbers are of another upstream."""
    if doc is None or doc.get(key) in (None, label):
        return doc
    say(f"left out {what}: made on {doc.get(key)}, not {label}; run it again")
    return None


def pr_body(cfg: ForkConfig, paths: ReportPaths) -> str:
    """The PR description in Markdown, with no local absolute path in it."""
    reports = cfg.work.reports
    red_green = read_typed(
        paths.red_green or reports / "red_green" / "red_green.json",
        ProofDoc,
        doc=PROOF,
        hint="run forkkit red-green first, or give 'forkkit pr-body --red-green FILE'",
    )
    fork = red_green.fork_path
    roots = {
        str(cfg.work.root.absolute()): "WORKDIR",
        str(cfg.root.absolute()): ".",
        **({str(fork): "FORK"} if fork else {}),
        str(Path.home()): "~",
    }
    label = red_green.upstream.label or cfg.upstream.label
    optional = {}
    for stem, given, key, kind in (
        ("repro", paths.repro, "upstream", REPRO),
        ("reconcile", paths.reconcile, "base", RECONCILE),
    ):
        default = reports / stem / f"{stem}.json"
        doc = _optional(given, default, doc=kind)
        shown = default.relative_to(cfg.work.root)
        optional[stem] = (
            doc if given else _of_pin(doc, key=key, label=label, what=shown)
        )
    inputs = PrInputs(
        title=cfg.fix.title,
        red_green=red_green,
        repro=optional["repro"],
        reconcile=optional["reconcile"],
        rebase=_rebase(cfg, paths.rebase),
        retired=read_retired(cfg.patches_dir / RETIRED_FILE),
        roots=roots,
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
