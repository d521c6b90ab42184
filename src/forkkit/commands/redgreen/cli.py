# SPDX-License-Identifier: Apache-2.0
"""``forkkit red-green`` arguments: parse, call :func:`run.prove`, report."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from forkkit.cliopts import (
    add_dest_option,
    add_parallel_option,
    add_upstream_options,
)
from forkkit.commands.redgreen.model import EXITS, Request, verdict_of
from forkkit.commands.redgreen.run import collect_lines, prove_all_lines, prove_line
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.output.outcome import Outcome, Shown
from forkkit.services.proof.lines import LINES_STEM
from forkkit.services.proof.model import ProofChecks
from forkkit.services.proof.summary import SUMMARY_STEM


def _add_line_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--all-lines",
        action="store_true",
        help="every upstream line ([line] also in fork.toml): each proven as "
        "here, and one table of every fix on every line (reports/lines)",
    )
    parser.add_argument(
        "--collect",
        type=Path,
        metavar="DIR",
        help="prove nothing: the table of every fix on every line from the "
        "summary.json files under DIR (one CI job per line, then this)",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit red-green`` options; pytest's after ``--``."""
    parser.description = (
        "Prove each fix alone: its tests on the fork without its runtime hunks "
        "(or with --base's runtime files: red) and on the fork (green), the "
        "same pytest invocation, and the related suites on the fork, a run of "
        "their own that decides PASS_TO_PASS; unchanged runs come from the "
        "result cache. "
        "Arguments after '--' go to pytest, e.g. 'forkkit red-green -- -k mamba'."
    )
    add_upstream_options(parser)
    add_dest_option(parser)
    parser.add_argument(
        "--fix",
        metavar="ID",
        help="prove this fix alone (default: every fix of the series, each alone)",
    )
    _add_line_options(parser)
    parser.add_argument(
        "--tests",
        nargs="+",
        help="test targets (default: the tests the fix's patches add or change; "
        "with several fixes, name one with --fix)",
    )
    parser.add_argument(
        "--related",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run fork.toml related_suites on the fix (default: yes)",
    )
    add_parallel_option(
        parser,
        help="red beside the run on the fix, and --hunks' runs side by side "
        "(default auto: when 2+ cores are free)",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="run every test now, even when the result cache has the same run",
    )
    parser.add_argument(
        "--timeout", type=float, help="seconds each pytest run may take (default: none)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="report folder, replaced by each run (default: <workdir>/reports/"
        "red_green)",
    )
    _add_base_options(parser)
    _add_check_options(parser)
    _add_bench_options(parser)
    parser.add_argument("pytest_args", nargs="*", help="after '--': pytest options")


def _add_base_options(parser: argparse.ArgumentParser) -> None:
    """Where red's runtime files come from: one patch of the series alone."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--base",
        metavar="REV",
        help="red takes the runtime files from REV, a commit of the fork tree, "
        "to prove the patches after it alone (default: the 'base' tag, "
        "pristine upstream)",
    )
    group.add_argument(
        "--base-patch",
        metavar="PATCH",
        help="--base at the commit that applied PATCH (its file name, a prefix "
        "such as 0002, or its position in the series from 1): proves the "
        "patches after it alone",
    )


def _add_bench_options(parser: argparse.ArgumentParser) -> None:
    """Another interpreter beside the line's own venv: a GPU runner's."""
    parser.add_argument(
        "--python",
        type=Path,
        metavar="PATH",
        help="run every test with this interpreter (a GPU runner's venv, with "
        "vLLM's requirements installed) instead of the line's CPU venv; its "
        "reports go to <workdir>/reports/red_green@BENCH and its timings are "
        "its own, so the CPU proof's stay as they are",
    )
    parser.add_argument(
        "--bench",
        metavar="NAME",
        help="the name of --python's bench in report folders (default: the "
        "name of its venv folder, e.g. 'gpu' for /opt/gpu/bin/python)",
    )


def _bench(args: argparse.Namespace) -> tuple[Path | None, str]:
    """The interpreter ``--python`` names and its bench's name (the line's
    venv: neither)."""
    if args.python is None:
        if args.bench is not None:
            raise ForkkitError("--bench names the bench of --python PATH; give it")
        return None, ""
    python = args.python.absolute()
    if not (python.is_file() and os.access(python, os.X_OK)):
        raise ForkkitError(f"--python {args.python}: not an executable interpreter")
    name = args.bench if args.bench is not None else _venv_name(python)
    if not _BENCH_NAME.fullmatch(name):
        raise ForkkitError(
            f"--bench {name!r}: a bench name is letters, digits, '.', '_' or '-' "
            "(at most 32, not starting with '.' or '-'); pick one with --bench"
        )
    return python, name


_BENCH_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,31}")


def _venv_name(python: Path) -> str:
    """A bench name from the interpreter's venv folder (``/opt/gpu/bin/python``:
    ``gpu``, ``.venv``: ``venv``), made a valid one."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", python.parent.parent.name)
    return name.lstrip(".-")[:32] or "python"


def _add_check_options(parser: argparse.ArgumentParser) -> None:
    """The guards' option, the flake check and the hunk matrix."""
    parser.add_argument(  # gone: what shows a bug is the fix's, in fork.toml
        "--allow-wrong-reason", action="store_true", help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=0,
        metavar="N",
        help="flake check: run green N more times on the fix, never from the "
        "result cache, first in reversed then in seeded random order; a test "
        "with mixed outcomes is FLAKY and the proof invalid",
    )
    parser.add_argument(
        "--seed",
        type=int,
        help="seed of --repeat's random orders (default: a fresh one, reported)",
    )
    parser.add_argument(
        "--hunks",
        action="store_true",
        help="hunk matrix: revert each runtime hunk of the fix alone and run the "
        "FAIL_TO_PASS tests (one run per hunk, cached by tree, side by side "
        "with --parallel); report which tests need each hunk",
    )
    parser.add_argument(
        "--strict-hunks",
        action="store_true",
        help="like --hunks, and a hunk no FAIL_TO_PASS test needs makes the "
        "proof invalid (default: a warning)",
    )


def _checks(args: argparse.Namespace) -> ProofChecks:
    if args.repeat < 0:
        raise ForkkitError(f"--repeat {args.repeat}: give a count of 0 or more")
    if args.allow_wrong_reason:
        raise ForkkitError(
            "--allow-wrong-reason is gone: a red failure raised through the fix's "
            "runtime files counts now; for another exception, declare it in "
            'fork.toml ([[fix]] raises = "ExceptionName"), which every command '
            "honours"
        )
    return ProofChecks(
        repeat=args.repeat,
        seed=args.seed,
        hunks=args.hunks or args.strict_hunks,
        strict_hunks=args.strict_hunks,
    )


def request(args: argparse.Namespace) -> Request:
    python, bench = _bench(args)
    return Request(
        python=python,
        bench=bench,
        dest=args.dest,
        fix=args.fix,
        all_lines=args.all_lines,
        collect=args.collect,
        tests=tuple(args.tests) if args.tests else None,
        pytest_args=tuple(args.pytest_args),
        related=args.related,
        out=args.out,
        parallel=args.parallel,
        timeout=args.timeout,
        fresh=args.fresh,
        checks=_checks(args),
        base=args.base,
        base_patch=args.base_patch,
    )


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Prove each fix alone (on every line with ``--all-lines``); the
    summary and each fix's Markdown (also the job summary); 0 when every fix
    is proven."""
    if req.all_lines or req.collect:
        lines = (
            collect_lines(cfg, req.collect)
            if req.collect
            else prove_all_lines(cfg, req)
        )
        markdown = lines.markdown
        return Outcome(
            code=EXITS.code(verdict_of(lines.doc.valid)),
            out=markdown,
            report=Shown(lines.folder, LINES_STEM, markdown),
        )
    proven = prove_line(cfg, req)
    markdown = proven.markdown
    return Outcome(
        code=EXITS.code(verdict_of(proven.valid)),
        out=markdown,
        report=Shown(proven.folder, SUMMARY_STEM, markdown),
    )
