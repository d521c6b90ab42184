# SPDX-License-Identifier: Apache-2.0
"""``forkkit reconcile`` arguments: parse, call :func:`run.reconcile`, report."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, assert_never

from forkkit.cliopts import add_pytest_args_option
from forkkit.config import ForkConfig
from forkkit.line import Line
from forkkit.output.outcome import Outcome, Shown
from forkkit.output.verdicts import ExitTable
from forkkit.pin import check_git_rev
from forkkit.services.reconcile.model import THEIR_TESTS, Measurement, Options
from forkkit.services.reconcile.run import reconcile
from forkkit.services.repro.model import EAGLE_MODES, PRESETS

DEFAULT_RESEND = "qwen3.5-0.8b"
Verdict = Literal["measured", "incomplete"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={
        "measured": (
            0,
            "every cell of the behaviour matrix (and of the resend table, "
            "unless --resend off) holds a measurement",
        ),
        "incomplete": (
            1,
            "some cells, or none, hold a measurement (the report names them)",
        ),
    }
)


def verdict_of(measurement: Measurement) -> Verdict:
    """``measured`` only when every cell is."""
    match measurement.verdict:
        case "measured":
            return "measured"
        case "partial" | "nothing":
            return "incomplete"
        case _:
            assert_never(measurement.verdict)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit reconcile`` options."""
    parser.add_argument(
        "--with",
        dest="with_ref",
        required=True,
        metavar="REF",
        help="competitor: a patch/mbox file, a git ref of the upstream repo "
        "(e.g. pull/53802/head) or a release NAME==VERSION",
    )
    parser.add_argument("--git-url", help="repository to fetch a git ref from")
    parser.add_argument("--sha256", default="", help="pin of a release competitor")
    parser.add_argument(
        "--sdist-url", default="", help="download a release competitor from here"
    )
    parser.add_argument(
        "--their-tests",
        choices=sorted(THEIR_TESTS),
        default="files",
        help="their tests: " + "; ".join(f"{k}: {v}" for k, v in THEIR_TESTS.items()),
    )
    parser.add_argument(
        "--no-their-tree",
        action="store_true",
        help="release: skip the columns run in the release's full tree",
    )
    parser.add_argument(
        "--resend",
        default=DEFAULT_RESEND,
        metavar="PRESET",
        help="the CPU resend reproduction on base, ours, theirs and the stacks, "
        f"as 'forkkit repro --preset PRESET' sets it up ({', '.join(PRESETS)}; "
        f"default {DEFAULT_RESEND}), or 'off'",
    )
    parser.add_argument(
        "--eagle-mode",
        choices=EAGLE_MODES,
        default="default",
        help="the resend's EAGLE mode: lookahead hashes (default) or block drop",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=1800.0,
        help="seconds per pytest run (and per resend reproduction)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="report folder, holding this run's output only "
        "(default: .forkkit/reports/reconcile)",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="rerun every cell (default: reuse runs of identical trees)",
    )
    add_pytest_args_option(
        parser, help="everything after this goes to every pytest run"
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    """A reconcile, as asked: the competing change and the options."""

    with_ref: str
    opts: Options


def request(args: argparse.Namespace) -> Request:
    opts = Options(
        sha256=args.sha256,
        sdist_url=args.sdist_url,
        their_tests=args.their_tests,
        their_tree=not args.no_their_tree,
        pytest_args=tuple(args.pytest_args),
        timeout=args.timeout,
        out_dir=args.out,
        fresh=args.fresh,
        resend="" if args.resend == "off" else args.resend,
        eagle_mode=args.eagle_mode,
    )
    return Request(
        with_ref=check_git_rev(args.with_ref, "--with", spaces=True), opts=opts
    )


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Reconcile; the report, and how much of it was measured
    (:class:`~forkkit.services.reconcile.model.Measurement`, named in the
    report and on the last line: :func:`verdict_of`)."""
    result, md, _ = reconcile(Line.of(cfg), req.with_ref, req.opts)
    markdown = md.read_text()
    measurement = result.measurement
    return Outcome(
        code=EXITS.code(verdict_of(measurement)),
        out=markdown,
        report=Shown(md.parent, md.stem, markdown),
        notes=(f"reconcile: {measurement.summary()}",),
    )
