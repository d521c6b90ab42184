# SPDX-License-Identifier: Apache-2.0
"""``forkkit materialize`` (alias ``fork``): build the fork tree."""

from __future__ import annotations

import argparse
import json

from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Upstream overrides, ``--dest``, ``--force`` and ``--json``."""
    add_upstream_options(parser)
    add_dest_option(parser)
    parser.add_argument(
        "--force",
        action="store_true",
        help="discard local changes in a fork tree forkkit built",
    )
    parser.add_argument("--json", action="store_true", help="print the tree as JSON")


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Build (or reuse) the tree; print its path or its JSON."""
    tree = materialize(cfg, dest=args.dest, force=args.force)
    print(json.dumps(tree.to_json(), indent=2) if args.json else tree.path)
    return 0
