# SPDX-License-Identifier: Apache-2.0
"""``forkkit testenv``: build or reuse the CPU venv for vLLM's suites."""

from __future__ import annotations

import argparse

from forkkit.config import ForkConfig
from forkkit.testing.env import ensure_testenv
from forkkit.testing.suites import tree_for_tests


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options of its own."""


def main(args: argparse.Namespace, cfg: ForkConfig) -> int:
    """Print the venv's python."""
    print(ensure_testenv(cfg, tree_for_tests(cfg, dest=None, pristine=False)).python)
    return 0
