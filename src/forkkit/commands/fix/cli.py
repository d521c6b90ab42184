# SPDX-License-Identifier: Apache-2.0
"""``forkkit fix add ID PATCH...``: bring a new fix into the series."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forkkit.commands.fix.model import EXITS, NewFix
from forkkit.commands.fix.run import AS_IS, Related, add_fix, change_related
from forkkit.config import ForkConfig
from forkkit.config.fixes import check_advisory
from forkkit.errors import ForkkitError
from forkkit.output.outcome import Outcome
from forkkit.patches.fixes import check_fix_id
from forkkit.patches.plaindiff import (
    DEFAULT_AUTHOR,
    Import,
    check_field,
    check_message,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``add``: the fix's id, its patch files and its provenance."""
    sub = parser.add_subparsers(
        dest="fix_command", metavar="add|related", required=True
    )
    _add_related(sub)
    add = sub.add_parser(
        "add",
        help="add a fix made of git format-patch files (or an mbox), or of a "
        "plain diff",
        description="Add a fix: its patches get the trailer 'Forkkit-Fix: ID' and "
        "follow the series, they must apply on the fork, the fix's runtime files "
        "and tests are derived from them and related suites suggested (the "
        "upstream test modules that import a module it changes); then the "
        "patches, patches/series and a [[fix]] table in fork.toml are written "
        "in one transaction.",
    )
    add.add_argument("id", help="the fix's id: lowercase letters, digits, . _ -")
    add.add_argument(
        "patches",
        nargs="+",
        type=Path,
        help="git format-patch files, an mbox, or a plain unified diff",
    )
    add.add_argument("--title", default="", help="default: its first patch's subject")
    add.add_argument("--forwarded", default="", help="the upstream PR it is, a URL")
    add.add_argument("--origin", default="", help="where it comes from")
    add.add_argument(
        "--upstream-pr", default="", help="the upstream PR it backports, a URL"
    )
    add.add_argument(
        "--advisory",
        default="",
        help="the security advisory it fixes: GHSA-xxxx-xxxx-xxxx or CVE-YYYY-NNNN",
    )
    add.add_argument(
        "--untested",
        metavar="REASON",
        help='carry it without a test (proof = "none" in fork.toml, with '
        "REASON): red-green names it unproven (declared) and never fails on it",
    )
    _add_import_options(add)
    add.add_argument(
        "--related",
        nargs="*",
        metavar="SUITE",
        help="its related suites (default: suggested from the imports; "
        "'--related' alone: none)",
    )


def _add_related(sub: Any) -> None:
    """``related``: a fix's related suites, shown or changed."""
    related = sub.add_parser(
        "related",
        help="show or change a fix's related suites (checked as fix add checks)",
        description="A fix's related suites: shown, or changed with --add and "
        "--drop; an added test module must be in the fork and be collected in "
        "the CPU venv. fork.toml is rewritten in one transaction.",
    )
    related.add_argument("id", help="the fix's id")
    related.add_argument(
        "--add", nargs="+", default=[], metavar="SUITE", help="suites to add"
    )
    related.add_argument(
        "--drop", nargs="+", default=[], metavar="SUITE", help="suites to drop"
    )


def _add_import_options(add: argparse.ArgumentParser) -> None:
    """How a plain diff (not format-patch output) becomes patches."""
    group = add.add_argument_group(
        "a plain diff (git diff, diff -ruN, a -p0 diff with labels)",
        "git reads it onto the fork's HEAD; each patch made of it names its "
        "source file (and part) in its message",
    )
    group.add_argument(
        "--author",
        default=DEFAULT_AUTHOR,
        help=f"its patches' author, 'Name <email>' (default: '{DEFAULT_AUTHOR}': "
        "name the vendor)",
    )
    group.add_argument("--subject", help="default: 'Import FILE' (and the part)")
    group.add_argument("--message", help="default: 'Imported from FILE, a plain diff.'")
    group.add_argument(
        "--split",
        choices=["files", "dirs"],
        help="one patch per file, or per top-level folder (default: one patch)",
    )


def _import(args: argparse.Namespace) -> Import:
    return Import(
        author=check_field(args.author, option="--author"),
        subject=check_field(args.subject, option="--subject") if args.subject else "",
        message=check_message(args.message) if args.message else "",
        split=args.split or "none",
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    new: NewFix | None  # None: ``fix related``
    files: tuple[Path, ...]
    related: tuple[str, ...] | None  # None: suggested
    how: Import = AS_IS  # a plain diff's patches
    change: Related | None = None  # fix related: the fix and its change


def request(args: argparse.Namespace) -> Request:
    if args.fix_command == "related":
        fid = check_fix_id(args.id, "forkkit fix related")
        change = Related(fix_id=fid, add=tuple(args.add), drop=tuple(args.drop))
        return Request(new=None, files=(), related=None, change=change)
    fid = check_fix_id(args.id, "forkkit fix add")
    for path in args.patches:
        if not path.is_file():
            raise ForkkitError(
                f"{path}: no such patch file; give git format-patch files"
            )
    return Request(
        new=NewFix(
            id=fid,
            title=args.title,
            forwarded=args.forwarded,
            origin=args.origin,
            upstream_pr=args.upstream_pr,
            advisory=check_advisory(args.advisory, "--advisory"),
            untested=check_field(args.untested, option="--untested")
            if args.untested is not None
            else "",
        ),
        files=tuple(args.patches),
        related=tuple(args.related) if args.related is not None else None,
        how=_import(args),
    )


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Add the fix (what was derived, and the next command), or show or
    change a fix's related suites."""
    if req.change is not None:
        suites = change_related(cfg, req.change)
        shown = ", ".join(suites) or "(none)"
        return Outcome(code=EXITS.code("added"), out=f"fix '{req.change.fix_id}': "
                       f"related suites: {shown}")  # fmt: skip
    assert req.new is not None
    added = add_fix(cfg, new=req.new, files=req.files, related=req.related, how=req.how)
    fix = added.fix
    shown = ", ".join(fix.related_suites) or "(none)"
    lines = [
        f"fix '{fix.id}': {fix.title}",
        f"  patches: {', '.join(fix.patches)}",
        f"  runtime files: {', '.join(fix.runtime_files) or '(none: a guard)'}",
        f"  tests: {', '.join(fix.test_files) or '(none)'}",
        f"  related suites: {shown}",
        *(added.suggestion.lines() if added.suggestion else []),
        f"  proof: none ({fix.untested})" if fix.untested else "",
        "next: forkkit red-green (this fix: listed unproven, declared)"
        if fix.untested
        else f"next: forkkit red-green --fix {fix.id}",
    ]
    lines = [ln for ln in lines if ln]
    return Outcome(code=EXITS.code("added"), out="\n".join(lines))
