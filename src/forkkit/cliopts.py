# SPDX-License-Identifier: Apache-2.0
"""Command-line options shared by several commands."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields
from pathlib import Path

from forkkit.config import ForkConfig, check_folder_path


def add_upstream_options(p: argparse.ArgumentParser) -> None:
    """``--source/--git-url/--rev``: which upstream to materialize the fork on."""
    p.add_argument(
        "--source", choices=["sdist", "git"], help="upstream source (fork.toml)"
    )
    p.add_argument("--git-url", help="upstream git URL (git source)")
    p.add_argument("--rev", help="upstream git revision (implies --source git)")


def add_dest_option(p: argparse.ArgumentParser) -> None:
    """``--dest``: the fork tree to use."""
    p.add_argument("--dest", type=Path, help="fork tree (default: <workdir>/fork)")


@dataclass(frozen=True)
class CommonOptions:
    """The options several commands share, read once after parsing.

    Every subparser has them (:func:`set_common_defaults`), so a command
    that does not offer one simply leaves it ``None``.
    """

    source: str | None
    git_url: str | None
    rev: str | None
    out: Path | None
    dest: Path | None

    @classmethod
    def from_namespace(cls, args: argparse.Namespace) -> CommonOptions:
        """Read them from a parsed command line."""
        return cls(
            source=args.source,
            git_url=args.git_url,
            rev=args.rev,
            out=args.out,
            dest=args.dest,
        )

    def apply_upstream(self, cfg: ForkConfig) -> ForkConfig:
        """``cfg`` with ``--source/--git-url/--rev`` applied (``--rev`` implies
        ``--source git``)."""
        changes: dict[str, str] = {}
        if self.source:
            changes["source"] = self.source
        if self.git_url:
            changes["git_url"] = self.git_url
        if self.rev:
            changes["git_rev"] = self.rev
            changes.setdefault("source", "git")
        return cfg.with_upstream(**changes) if changes else cfg


def set_common_defaults(parser: argparse.ArgumentParser) -> None:
    """Give ``parser`` every :class:`CommonOptions` field, ``None`` by default."""
    parser.set_defaults(**{f.name: None for f in fields(CommonOptions)})


def check_path_options(options: CommonOptions) -> None:
    """Fail in one line, before any work, when ``--out``/``--dest`` is unusable.

    ``--out`` must be (or become) a writable folder; ``--dest`` must not name
    a file. Call it before a command starts (nothing has changed yet).
    """
    if options.out is not None:
        check_folder_path(
            Path(options.out).absolute(),
            what="--out",
            fix="pick a writable folder for the reports",
            writable=True,
        )
    if options.dest is not None:
        check_folder_path(
            Path(options.dest).absolute(),
            what="--dest",
            fix="pick a folder for the fork tree",
        )


def add_proof_options(parser: argparse.ArgumentParser) -> None:
    """``--focused-only``, ``--parallel`` and ``--pytest-args`` of the
    red/green proof a command runs on its result (rebase, watch)."""
    parser.add_argument(
        "--focused-only",
        action="store_true",
        help="red/green on the focused tests only (not the related suites)",
    )
    add_parallel_option(
        parser,
        help="the proof's red beside its run on the fix, packed onto both cores "
        "(default auto: when 2+ cores are free as the proof starts)",
    )
    add_pytest_args_option(parser)


def add_parallel_option(parser: argparse.ArgumentParser, *, help: str) -> None:
    """``--parallel [on|off|auto]`` (default auto; bare: on)."""
    parser.add_argument(
        "--parallel",
        nargs="?",
        const="on",
        default="auto",
        choices=["on", "off", "auto"],
        help=help,
    )


def add_pytest_args_option(
    parser: argparse.ArgumentParser, help: str = "everything after this goes to pytest"
) -> None:
    """``--pytest-args ...``: the rest of the command line goes to pytest."""
    parser.add_argument(
        "--pytest-args", nargs=argparse.REMAINDER, default=[], help=help
    )
