# SPDX-License-Identifier: Apache-2.0
"""``forkkit watch`` arguments: parse, call :func:`run.watch`, report."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from forkkit.cliopts import add_proof_options
from forkkit.config import ForkConfig
from forkkit.line import Line
from forkkit.output.outcome import Outcome, Shown
from forkkit.output.report import write_reports
from forkkit.services.watch.doc import watch_doc
from forkkit.services.watch.model import EXITS, REPORT_STEM, WatchOptions
from forkkit.services.watch.render import render_markdown
from forkkit.services.watch.run import watch

# --help: after the exit codes (forkkit.cli adds them from EXITS)
_EPILOG = """\
Reports: <workdir>/reports/watch/ (watch.md, watch.json, the rebase report
and its red/green proof); the Markdown is appended to $GITHUB_STEP_SUMMARY
when that is set. patches/ and fork.toml are never written.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit watch`` options."""
    parser.description = (
        "Dry-run rebase of the series onto the newest upstream release newer\n"
        "than the pin (pre-releases only with --pre), and its verdict."
    )
    parser.epilog = _EPILOG
    parser.add_argument(
        "--index-url",
        default="",
        metavar="URL",
        help="PEP 691 simple index (or file:// folder) instead of fork.toml's",
    )
    parser.add_argument(
        "--version",
        default="",
        metavar="X",
        help="check this release instead of the newest one",
    )
    parser.add_argument(
        "--pre", action="store_true", help="consider pre-releases (rc, beta, dev)"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="the history: a dry-run rebase onto every release newer than the pin "
        "(how each patch applies, and whether it is still needed there); the "
        "verdict stays the newest release's",
    )
    add_proof_options(parser)


@dataclass(frozen=True, kw_only=True)
class Request:
    opts: WatchOptions


def request(args: argparse.Namespace) -> Request:
    opts = WatchOptions(
        index_url=args.index_url,
        version=args.version,
        pre=args.pre,
        all=args.all,
        related=not args.focused_only,
        pytest_args=tuple(args.pytest_args),
        parallel=args.parallel,
    )
    return Request(opts=opts)


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Watch into reports/watch/; the verdict's line and exit code."""
    with cfg.work.report_folder(REPORT_STEM) as folder:
        result = watch(Line.of(cfg), req.opts, folder=folder.path)
        text = render_markdown(result)
        write_reports(folder.path, REPORT_STEM, markdown=text, report=watch_doc(result))
    return Outcome(
        code=EXITS.code(result.verdict),
        out=f"{result.verdict}: {result.reason}",
        report=Shown(folder.dest, REPORT_STEM, text),
    )
