"""Command-line options shared by several commands."""

from __future__ import annotations

import argparse
from pathlib import Path

from forkkit.config import check_folder_path


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


def check_path_options(args: argparse.Namespace) -> None:
    """Fail in one line, before any work, when ``--out``/``--dest`` is unusable.

    ``--out`` must be (or become) a writable folder; ``--dest`` must not name
    a file. Call it before a command starts (nothing has changed yet).
    """
    out = getattr(args, "out", None)
    if out is not None:
        check_folder_path(
            Path(out).absolute(),
            what="--out",
            fix="pick a writable folder for the reports",
            writable=True,
        )
    dest = getattr(args, "dest", None)
    if dest is not None:
        check_folder_path(
            Path(dest).absolute(), what="--dest", fix="pick a folder for the fork tree"
        )


def add_proof_options(parser: argparse.ArgumentParser) -> None:
    """``--focused-only`` and ``--pytest-args`` of the red/green proof a
    command runs on its result (rebase, watch)."""
    parser.add_argument(
        "--focused-only",
        action="store_true",
        help="red/green on the focused tests only (not the related suites)",
    )
    parser.add_argument(
        "--pytest-args",
        nargs=argparse.REMAINDER,
        default=[],
        help="everything after this goes to pytest",
    )
