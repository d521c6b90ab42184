# SPDX-License-Identifier: Apache-2.0
"""How a command ends, and the one place that shows it.

Every command's ``run(cfg, request)`` returns an :class:`Outcome`; the
dispatcher (:mod:`forkkit.cli`) hands it to :func:`publish`, which prints
what the command has to say, adds its report to the GitHub job summary and
names the published report. A command prints nothing itself (progress goes
through :mod:`forkkit.output.progress`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from forkkit.output.progress import say
from forkkit.output.report import append_step_summary


@dataclass(frozen=True)
class Shown:
    """A published report: its folder, its files' stem, and the Markdown
    that goes into the job summary ("" adds none)."""

    folder: Path
    stem: str
    markdown: str = ""

    @property
    def files(self) -> tuple[Path, Path]:
        """The report's Markdown and JSON."""
        return self.folder / f"{self.stem}.md", self.folder / f"{self.stem}.json"


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What a command ends with: its exit code, its standard output, its
    report (if it publishes one) and notes for standard error."""

    code: int
    out: str = ""
    report: Shown | None = None
    notes: tuple[str, ...] = ()


def publish(outcome: Outcome) -> int:
    """Show ``outcome``: its output on stdout, its report's Markdown in the
    job summary, the report's files and the notes on stderr; its exit code."""
    if outcome.out:
        text = outcome.out
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    report = outcome.report
    if report is not None:
        if report.markdown:
            append_step_summary(report.markdown)
        md, js = report.files
        say(f"report: {md}\njson: {js}")
    for note in outcome.notes:
        say(note)
    return outcome.code
