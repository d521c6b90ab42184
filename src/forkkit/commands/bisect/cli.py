# SPDX-License-Identifier: Apache-2.0
"""``forkkit bisect`` arguments: parse, call the bisect service, report."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forkkit.config import ForkConfig
from forkkit.line import Line
from forkkit.output.outcome import Outcome, Shown
from forkkit.output.report import write_reports
from forkkit.output.verdicts import ExitTable
from forkkit.pin import check_git_rev
from forkkit.services.bisect.doc import bisect_doc
from forkkit.services.bisect.model import STEM, BisectResult
from forkkit.services.bisect.render import render_all, render_line
from forkkit.services.bisect.run import BisectOptions, bisect

Verdict = Literal["found", "not-found"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={
        "found": (0, "the report names the first commit that absorbs each fix"),
        "not-found": (
            1,
            "a fix is still needed at --bad (nothing in the range absorbed it), "
            "or patches/retired.toml records another commit for it",
        ),
    },
    errors="no git upstream, --good not an ancestor, ...",
)
# --help: after the exit codes (forkkit.cli adds them from EXITS)
_EPILOG = """\
Reports: <workdir>/reports/bisect/ (bisect.md, bisect.json). patches/ and
fork.toml are never written, except patches/retired.toml with --record.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit bisect`` options."""
    parser.description = (
        "Find the upstream commit that made a fix unnecessary: the first\n"
        "commit between --good (the fix is needed there; default: the pin)\n"
        "and --bad (default: the head of the followed branch) where the fix's\n"
        "FAIL_TO_PASS tests pass without its runtime change; O(log n) proofs."
    )
    parser.epilog = _EPILOG
    parser.add_argument("--fix", metavar="ID", help="one fix (default: each fix)")
    parser.add_argument("--good", default="", metavar="REV", help="needed here")
    parser.add_argument("--bad", default="", metavar="REV", help="absorbed here")
    parser.add_argument(
        "--until",
        default="",
        metavar="NAME==VERSION",
        help="bisect over releases instead of commits: every release on the "
        "index after the pin, up to this one, verified as the pin is",
    )
    parser.add_argument(
        "--tests-from",
        type=Path,
        metavar="FORK_TOML",
        help="the fix's test files as another line carries them (their current "
        "text, refreshed for renamed test helpers; default: this fork's)",
    )
    parser.add_argument(
        "--record",
        action="store_true",
        help="where a retired fix's record in patches/retired.toml says "
        "otherwise, write the measured answer into it (one transaction)",
    )
    parser.add_argument(
        "--git-url",
        metavar="URL",
        help="the upstream repository to bisect (default: fork.toml's git_url)",
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds each pytest run may take (default: none)"
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    opts: BisectOptions


def request(args: argparse.Namespace) -> Request:
    return Request(
        opts=BisectOptions(
            fix=args.fix,
            good=args.good and check_git_rev(args.good, "--good"),
            bad=args.bad and check_git_rev(args.bad, "--bad"),
            tests_from=args.tests_from,
            until=args.until,
            record=args.record,
            timeout=args.timeout,
        )
    )


def verdict_of(results: Sequence[BisectResult]) -> Verdict:
    """``found`` when each fix's first absorbing commit was found (and is
    the one its retirement record names, if it has one)."""
    return "found" if all(r.found and r.agrees for r in results) else "not-found"


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Bisect into reports/bisect/; the verdict's line and exit code."""
    with cfg.work.report_folder(STEM) as folder:
        results = bisect(Line.of(cfg), req.opts)
        text = render_all(results)
        write_reports(folder.path, STEM, markdown=text, report=bisect_doc(results))
    return Outcome(
        code=EXITS.code(verdict_of(results)),
        out="\n".join(render_line(r) for r in results),
        report=Shown(folder.dest, STEM, text),
    )
