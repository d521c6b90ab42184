# SPDX-License-Identifier: Apache-2.0
"""``forkkit red-green`` arguments: parse, call :func:`run.prove`, report."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from forkkit.cliopts import (
    add_dest_option,
    add_parallel_option,
    add_upstream_options,
)
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.fixes import load_fixes
from forkkit.fork.tree import ForkTree, materialize
from forkkit.output.outcome import Outcome, Shown
from forkkit.patches.fixes import Fix
from forkkit.services.proof.model import ProofChecks, RedGreenResult, patch_commit
from forkkit.services.proof.run import prove, resolve_parallel
from forkkit.services.proof.summary import SUMMARY_STEM, prove_fixes, prove_one_fix
from forkkit.testing.cache import ResultCache
from forkkit.testing.suiterun import SuiteRun


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``forkkit red-green`` options; pytest's after ``--``."""
    parser.description = (
        "Prove the fix: the fork's tests with the runtime files at upstream base "
        "or at --base (red), and one run on the fix of the related suites plus "
        "those tests (green is read from it); unchanged runs come from the "
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


def _base(req: Request, tree: ForkTree) -> str | None:
    """The revision ``--base`` or ``--base-patch`` names (None: neither)."""
    if req.base_patch is None:
        return req.base
    try:
        return patch_commit(tree.patch_commits, req.base_patch)[1]
    except ValueError as exc:
        raise ForkkitError(f"--base-patch {req.base_patch}: {exc}") from None


def _add_check_options(parser: argparse.ArgumentParser) -> None:
    """The guards' option, the flake check and the hunk matrix."""
    parser.add_argument(
        "--allow-wrong-reason",
        action="store_true",
        help="accept FAIL_TO_PASS tests that fail on base with something other "
        "than an assertion (ImportError, NameError, a setup error...): a warning, "
        "not a problem",
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
    return ProofChecks(
        allow_wrong_reason=args.allow_wrong_reason,
        repeat=args.repeat,
        seed=args.seed,
        hunks=args.hunks or args.strict_hunks,
        strict_hunks=args.strict_hunks,
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    """A red/green proof, as asked."""

    dest: Path | None
    fix: str | None  # None: every fix
    tests: tuple[str, ...] | None  # None: the fix's own focused tests
    pytest_args: tuple[str, ...]
    related: bool
    out: Path | None
    parallel: str  # on, off, auto
    timeout: float | None
    fresh: bool
    checks: ProofChecks
    base: str | None
    base_patch: str | None


def request(args: argparse.Namespace) -> Request:
    return Request(
        dest=args.dest,
        fix=args.fix,
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
    """Prove each fix alone; the summary and each fix's Markdown (also the
    job summary); 0 when every fix is proven."""
    fixes = load_fixes(cfg)
    chosen = fixes.pick(req.fix)
    if req.tests and len(chosen) > 1:
        raise ForkkitError(
            f"--tests: the series has {len(chosen)} fixes "
            f"({', '.join(f.id for f in chosen)}); name the one they prove with --fix"
        )
    tree = materialize(cfg, dest=req.dest)
    base = _base(req, tree)
    parallel = resolve_parallel(req.parallel)
    # one cache for every fix: with --fresh, a run made now serves them all
    cache = ResultCache(cfg.work.results, fresh=req.fresh)

    def prove_one(fix: Fix, out: Path) -> RedGreenResult[SuiteRun]:
        return prove(
            cfg,
            tree,
            tests=list(req.tests) if req.tests else None,
            pytest_args=req.pytest_args,
            related=req.related,
            out_dir=out,
            parallel=parallel,
            timeout=req.timeout,
            fresh=req.fresh,
            checks=req.checks,
            base=base,
            fix=fix.id,
            fixes=fixes,
            cache=cache,
        )

    if req.fix is None:
        proven = prove_fixes(cfg, chosen, out=req.out, prove_one=prove_one)
    else:  # that fix's report alone is replaced; the summary is written again
        proven = prove_one_fix(
            cfg, chosen[0], fixes.fixes, out=req.out, prove_one=prove_one
        )
    markdown = proven.markdown
    return Outcome(
        code=0 if proven.summary.valid else 1,
        out=markdown,
        report=Shown(proven.folder, SUMMARY_STEM, markdown),
    )
