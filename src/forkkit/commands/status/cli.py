# SPDX-License-Identifier: Apache-2.0
"""``forkkit status``: the fork tree's state, read-only (takes no lock)."""

from __future__ import annotations

import argparse
import json

from forkkit.cliopts import add_dest_option
from forkkit.config import ForkConfig
from forkkit.fork.status import fork_status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--dest`` and ``--json``."""
    add_dest_option(parser)
    parser.add_argument("--json", action="store_true", help="print the state as JSON")


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Print the summary line, or the state as JSON."""
    status = fork_status(cfg, dest=args.dest)
    print(json.dumps(status, indent=2) if args.json else status["summary"])
    return 0
