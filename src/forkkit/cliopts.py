"""Command-line options shared by several commands."""

from __future__ import annotations

import argparse
from pathlib import Path


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
