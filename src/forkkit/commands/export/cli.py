# SPDX-License-Identifier: Apache-2.0
"""``forkkit export``: write the fork tree's commits back to ``patches/``."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forkkit.cliopts import add_dest_option
from forkkit.config import ForkConfig
from forkkit.fork.export import export_series
from forkkit.output.outcome import Outcome
from forkkit.output.verdicts import ExitTable

Verdict = Literal["exported"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={"exported": (0, "the fork tree's commits are written to patches/")},
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--dest`` and ``--rewrite``."""
    add_dest_option(parser)
    parser.add_argument(
        "--rewrite",
        action="store_true",
        help="accept a rewritten series on branch fork (rebase -i, --amend)",
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    dest: Path | None
    rewrite: bool


def request(args: argparse.Namespace) -> Request:
    return Request(dest=args.dest, rewrite=args.rewrite)


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Export; the patch names, and a note for each one removed."""
    result = export_series(cfg, dest=req.dest, rewrite=req.rewrite)
    return Outcome(
        code=EXITS.code("exported"),
        out="\n".join(result.names),
        notes=tuple(f"removed {n} (no longer in the series)" for n in result.removed),
    )
