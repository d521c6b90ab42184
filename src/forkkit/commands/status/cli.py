# SPDX-License-Identifier: Apache-2.0
"""``forkkit status``: the fork tree's state, read-only (takes no lock)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from forkkit.cliopts import add_dest_option
from forkkit.config import ForkConfig
from forkkit.fork.status import fork_status
from forkkit.output.outcome import Outcome
from forkkit.output.verdicts import ExitTable

Verdict = Literal["shown"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={"shown": (0, "the fork tree's state on stdout (read-only)")},
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--dest`` and ``--json``."""
    add_dest_option(parser)
    parser.add_argument("--json", action="store_true", help="print the state as JSON")


@dataclass(frozen=True, kw_only=True)
class Request:
    dest: Path | None
    as_json: bool


def request(args: argparse.Namespace) -> Request:
    return Request(dest=args.dest, as_json=args.json)


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """The summary line, or the state as JSON."""
    status = fork_status(cfg, dest=req.dest)
    out = json.dumps(status, indent=2) if req.as_json else str(status["summary"])
    return Outcome(code=EXITS.code("shown"), out=out)
