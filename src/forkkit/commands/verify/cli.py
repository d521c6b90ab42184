# SPDX-License-Identifier: Apache-2.0
"""``forkkit verify REPORT.json`` arguments: parse, call :func:`run.verify`."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from forkkit.cliopts import add_dest_option
from forkkit.commands.verify.model import EXITS, STEM
from forkkit.commands.verify.render import render_text
from forkkit.commands.verify.run import verify
from forkkit.config import ForkConfig
from forkkit.output.outcome import Outcome, Shown
from forkkit.services.proof.model import STEM as PROOF_STEM


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit verify`` options."""
    parser.description = (
        "Replay a red/green report: rebuild its trees from the pin and the "
        "series, rerun the same tests (nothing from the result cache), and "
        "compare every classification."
    )
    parser.add_argument("report", type=Path, help="a red_green.json to replay")
    add_dest_option(parser)
    parser.add_argument(
        "--timeout", type=float, help="seconds each pytest run may take (default: none)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="the replay's report folder (default: <workdir>/reports/verify)",
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    report: Path
    dest: Path | None
    out: Path | None
    timeout: float | None


def request(args: argparse.Namespace) -> Request:
    return Request(
        report=args.report, dest=args.dest, out=args.out, timeout=args.timeout
    )


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Replay; the verdict; 0 when nothing differs."""
    result = verify(
        cfg, req.report, dest=req.dest, out_dir=req.out, timeout=req.timeout
    )
    replay = Shown(cfg.work.report_dest(STEM, out=req.out), PROOF_STEM)
    return Outcome(
        code=EXITS.code(result.verdict), out=render_text(result), report=replay
    )
