# SPDX-License-Identifier: Apache-2.0
"""``forkkit export``: write the fork tree's commits back to ``patches/``."""

from __future__ import annotations

import argparse

from forkkit.cliopts import add_dest_option
from forkkit.config import ForkConfig
from forkkit.fork.export import export_series
from forkkit.output.progress import say


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--dest`` and ``--rewrite``."""
    add_dest_option(parser)
    parser.add_argument(
        "--rewrite",
        action="store_true",
        help="accept a rewritten series on branch fork (rebase -i, --amend)",
    )


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Export; print the patch names and say which were removed."""
    result = export_series(cfg, dest=args.dest, rewrite=args.rewrite)
    for name in result.names:
        print(name)
    for name in result.removed:
        say(f"removed {name} (no longer in the series)")
    return 0
