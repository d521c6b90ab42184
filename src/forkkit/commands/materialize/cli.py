# SPDX-License-Identifier: Apache-2.0
"""``forkkit materialize`` (alias ``fork``): build the fork tree."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.output.outcome import Outcome
from forkkit.output.verdicts import ExitTable

Verdict = Literal["built"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={
        "built": (
            0,
            "the fork tree is built (or reused); its path, or --json, on stdout",
        )
    },
)


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


@dataclass(frozen=True, kw_only=True)
class Request:
    dest: Path | None
    force: bool
    as_json: bool


def request(args: argparse.Namespace) -> Request:
    return Request(dest=args.dest, force=args.force, as_json=args.json)


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Build (or reuse) the tree; its path or its JSON."""
    tree = materialize(cfg, dest=req.dest, force=req.force)
    out = json.dumps(tree.to_json(), indent=2) if req.as_json else str(tree.path)
    return Outcome(code=EXITS.code("built"), out=out)
