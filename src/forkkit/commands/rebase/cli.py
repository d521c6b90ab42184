# SPDX-License-Identifier: Apache-2.0
"""``forkkit rebase`` on the command line: parse, rebase, publish the reports."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, assert_never

from forkkit.cliopts import add_proof_options
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.line import Line
from forkkit.output.outcome import Outcome, Shown
from forkkit.output.report import write_reports
from forkkit.output.verdicts import ExitTable
from forkkit.services.rebase.doc import rebase_doc
from forkkit.services.rebase.model import Options, RebaseResult
from forkkit.services.rebase.render import render_markdown, verdict_line
from forkkit.services.rebase.run import rebase, resolve_target

REPORT_STEM = "rebase"
Verdict = Literal["rebased", "stopped"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={
        "rebased": (0, "the series rebased (or retires); with --apply, it is written"),
        "stopped": (
            1,
            "a patch conflicts, the red/green proof failed, or --apply wrote "
            "nothing (unproven)",
        ),
    }
)


def verdict_of(result: RebaseResult, *, apply: bool) -> Verdict:
    """``rebased`` when the series moved (and, with ``apply``, was written)."""
    match result.outcome:
        case "rebased" | "retire":
            return "rebased" if result.written or not apply else "stopped"
        case "conflict" | "proof-failed":
            return "stopped"
        case _:
            assert_never(result.outcome)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit rebase`` options."""
    g = parser.add_mutually_exclusive_group(required=True)
    g.add_argument(
        "--onto", metavar="NAME==VERSION", help="a PyPI release, e.g. vllm==0.31.0"
    )
    g.add_argument(
        "--onto-rev", metavar="REV", help="an upstream git revision (git source)"
    )
    parser.add_argument(
        "--sha256", help="pin the new sdist's sha256 instead of trusting the index"
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="when rebased and proven by red/green, replace patches/ and re-pin "
        "fork.toml (default: dry run into <workdir>/rebase/out)",
    )
    parser.add_argument(
        "--apply-unproven",
        action="store_true",
        help="like --apply, but write a result that has no valid red/green proof "
        "(e.g. with --no-red-green); the report says unproven",
    )
    parser.add_argument(
        "--keep-tests",
        action="store_true",
        help="absorbed patches keep their test changes as tests-only patches: "
        "the series guards upstream's fix (its red/green checks they pass)",
    )
    parser.add_argument(
        "--take-upstream",
        action="store_true",
        help="a patch whose conflicts are all files upstream deleted, or added "
        "itself, leaves the series (retired as deleted-upstream or "
        "added-upstream): what the report proposes",
    )
    parser.add_argument(
        "--resolve-from",
        type=Path,
        metavar="DIFF",
        help="a resolution made already: the vendor's own port of the series "
        "to the new upstream (a plain diff or format-patch file that applies "
        "there); a conflicted file it covers takes its version, and the report "
        "says which files it resolved",
    )
    parser.add_argument(
        "--no-semantic",
        action="store_true",
        help="skip the test-based (semantic) absorption check",
    )
    parser.add_argument(
        "--no-red-green", action="store_true", help="skip red/green on the result"
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds each pytest run may take (default: none)"
    )
    add_proof_options(parser)


@dataclass(frozen=True, kw_only=True)
class Request:
    """A rebase, as asked: the target and the options."""

    onto: str | None
    onto_rev: str | None
    sha256: str | None
    opts: Options


def request(args: argparse.Namespace) -> Request:
    opts = Options(
        apply=args.apply or args.apply_unproven,
        apply_unproven=args.apply_unproven,
        keep_tests=args.keep_tests,
        semantic=not args.no_semantic,
        red_green=not args.no_red_green,
        related=not args.focused_only,
        pytest_args=tuple(args.pytest_args),
        timeout=args.timeout,
        parallel=args.parallel,
        resolve_from=args.resolve_from,
        take_upstream=args.take_upstream,
    )
    if args.resolve_from is not None and not args.resolve_from.is_file():
        raise ForkkitError(f"--resolve-from {args.resolve_from}: no such file")
    return Request(
        onto=args.onto, onto_rev=args.onto_rev, sha256=args.sha256, opts=opts
    )


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Rebase into reports/rebase/; 0 only when it rebased (and, with
    --apply, wrote the result)."""
    with cfg.work.report_folder(REPORT_STEM) as folder:
        line = Line.of(cfg)
        target = resolve_target(
            line, req.onto, onto_rev=req.onto_rev, sha256=req.sha256
        )
        result = rebase(line, target, req.opts, reports=folder.path / "red-green")
        markdown = render_markdown(result)
        write_reports(
            folder.path, REPORT_STEM, markdown=markdown, report=rebase_doc(result)
        )
    lines = [
        f"{p.name}: {p.status}" + (f" ({p.detail})" if p.detail else "")
        for p in result.patches
    ]
    return Outcome(
        code=EXITS.code(verdict_of(result, apply=req.opts.apply)),
        out="\n".join([*lines, verdict_line(result)]),
        report=Shown(folder.dest, REPORT_STEM, markdown),
    )
