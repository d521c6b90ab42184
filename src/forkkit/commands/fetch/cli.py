# SPDX-License-Identifier: Apache-2.0
"""``forkkit fetch``: download and verify the pinned sdist; print its path."""

from __future__ import annotations

import argparse

from forkkit.config import ForkConfig
from forkkit.upstream.sdist import fetch_sdist


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options of its own."""


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Print the verified sdist's path."""
    print(fetch_sdist(cfg.upstream, cfg.work.sdist_cache))
    return 0
