# SPDX-License-Identifier: Apache-2.0
"""``forkkit pr-body`` arguments: parse, call :func:`run.pr_body`."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from forkkit.commands.prbody.model import EXITS
from forkkit.commands.prbody.run import (
    ReportPaths,
    check_output_file,
    pr_body,
    write_body,
)
from forkkit.config import ForkConfig
from forkkit.output.outcome import Outcome


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit pr-body`` options."""
    parser.description = (
        "Write the pull-request description (Purpose, Test Plan, Test Result, "
        "provenance, a place for the AI-assistance disclosure) from the "
        "red/green report, and the repro and reconcile reports when present."
    )
    parser.add_argument(
        "--fix",
        metavar="ID",
        help="the fix the PR is (default: the series' only fix; with several, "
        "name one)",
    )
    parser.add_argument(
        "--red-green",
        type=Path,
        metavar="FILE",
        help="red/green report (default: <workdir>/reports/red_green/ID/"
        "red_green.json); refused when made on another pin, series or fix",
    )
    parser.add_argument(
        "--repro",
        type=Path,
        metavar="FILE",
        help="repro report (default: <workdir>/reports/repro/repro.json if there)",
    )
    parser.add_argument(
        "--reconcile",
        type=Path,
        metavar="FILE",
        help="reconcile report (default: <workdir>/reports/reconcile/"
        "reconcile.json if there)",
    )
    parser.add_argument(
        "--rebase",
        type=Path,
        metavar="FILE",
        help="rebase report (default: <workdir>/reports/rebase/rebase.json if "
        "there and made from the current pin): what a newer release absorbed",
    )
    parser.add_argument(
        "--output",
        "-o",
        dest="out_file",
        type=Path,
        metavar="FILE",
        help="write the description to FILE (default: stdout)",
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    paths: ReportPaths
    out_file: Path | None  # None: stdout


def request(args: argparse.Namespace) -> Request:
    if args.out_file is not None:
        check_output_file(args.out_file)
    paths = ReportPaths(
        red_green=args.red_green,
        fix=args.fix,
        repro=args.repro,
        reconcile=args.reconcile,
        rebase=args.rebase,
    )
    return Request(paths=paths, out_file=args.out_file)


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """The description, on stdout or in ``--output FILE``."""
    text = pr_body(cfg, req.paths)
    if req.out_file is None:
        return Outcome(code=EXITS.code("written"), out=text)
    write_body(text, req.out_file)
    return Outcome(
        code=EXITS.code("written"), notes=(f"PR description: {req.out_file}",)
    )
