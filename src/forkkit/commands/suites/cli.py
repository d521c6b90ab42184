# SPDX-License-Identifier: Apache-2.0
"""``forkkit suites``: run the related suites (or given tests) on the fork."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.config import ForkConfig
from forkkit.testing.suites import run_suites, tree_for_tests


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


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Run pytest on the tree; 0 only when it passed."""
    tree = tree_for_tests(cfg, dest=args.dest, pristine=args.pristine)
    ran = run_suites(
        cfg,
        tree,
        args.tests or list(cfg.fix.related_suites),
        extra=list(args.pytest_args),
        out=args.out,
        pristine=args.pristine,
    )
    print(f"junit: {ran.junit}", file=sys.stderr)
    return 0 if ran.returncode == 0 else 1
