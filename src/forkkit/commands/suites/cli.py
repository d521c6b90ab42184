# SPDX-License-Identifier: Apache-2.0
"""``forkkit suites``: run the related suites (or given tests) on the fork."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.config import ForkConfig
from forkkit.fork.fixes import load_fixes
from forkkit.output.outcome import Outcome
from forkkit.output.verdicts import ExitTable
from forkkit.testing.suites import run_suites, tree_for_tests

Verdict = Literal["passed", "failed"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={
        "passed": (0, "pytest passed on the tree"),
        "failed": (1, "pytest did not pass: a failure, an error, no test collected"),
    }
)


def verdict_of(returncode: int) -> Verdict:
    """The verdict of pytest's exit status."""
    return "passed" if returncode == 0 else "failed"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Upstream overrides, ``--dest``, ``--pristine``, ``--out``, tests."""
    add_upstream_options(parser)
    add_dest_option(parser)
    parser.add_argument(
        "--pristine",
        action="store_true",
        help="run on the unpatched upstream tree instead",
    )
    parser.add_argument(
        "--out", type=Path, help="report folder (default: .forkkit/reports/suites)"
    )
    parser.add_argument("tests", nargs="*", help="test paths (default: related suites)")
    parser.add_argument(
        "--pytest-args",
        nargs=argparse.REMAINDER,
        default=[],
        help="everything after this goes to pytest",
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    dest: Path | None
    pristine: bool
    out: Path | None
    tests: tuple[str, ...]  # none: the related suites
    pytest_args: tuple[str, ...]


def request(args: argparse.Namespace) -> Request:
    return Request(
        dest=args.dest,
        pristine=args.pristine,
        out=args.out,
        tests=tuple(args.tests),
        pytest_args=tuple(args.pytest_args),
    )


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Run pytest on the tree; 0 only when it passed."""
    tree = tree_for_tests(cfg, dest=req.dest, pristine=req.pristine)
    ran = run_suites(
        cfg,
        tree,
        list(req.tests or load_fixes(cfg).related_suites),
        extra=list(req.pytest_args),
        out=req.out,
        pristine=req.pristine,
    )
    return Outcome(
        code=EXITS.code(verdict_of(ran.returncode)), notes=(f"junit: {ran.junit}",)
    )
