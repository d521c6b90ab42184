# SPDX-License-Identifier: Apache-2.0
"""``forkkit pr-body`` arguments: parse, call :func:`run.pr_body`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from forkkit.commands.prbody.run import (
    ReportPaths,
    check_output_file,
    pr_body,
    write_body,
)
from forkkit.config import ForkConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit pr-body`` options."""
    parser.description = (
        "Write the pull-request description (Purpose, Test Plan, Test Result, "
        "provenance, a place for the AI-assistance disclosure) from the "
        "red/green report, and the repro and reconcile reports when present."
    )
    parser.add_argument(
        "--red-green",
        type=Path,
        metavar="FILE",
        help="red/green report (default: <workdir>/reports/red_green/red_green.json)",
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


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Render the description to stdout or ``--output FILE``."""
    if args.out_file is not None:
        check_output_file(args.out_file)
    paths = ReportPaths(
        red_green=args.red_green,
        repro=args.repro,
        reconcile=args.reconcile,
        rebase=args.rebase,
    )
    text = pr_body(cfg, paths)
    if args.out_file is None:
        sys.stdout.write(text)
    else:
        write_body(text, args.out_file)
        print(f"PR description: {args.out_file}", file=sys.stderr)
    return 0
