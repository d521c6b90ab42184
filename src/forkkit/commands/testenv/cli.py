# SPDX-License-Identifier: Apache-2.0
"""``forkkit testenv``: build or reuse the CPU venv for vLLM's suites."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Literal

from forkkit.config import ForkConfig
from forkkit.output.outcome import Outcome
from forkkit.output.verdicts import ExitTable
from forkkit.testing.env import ensure_testenv
from forkkit.testing.suites import tree_for_tests

Verdict = Literal["ready"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={"ready": (0, "the CPU test venv is built or reused; its python on stdout")},
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options of its own."""


@dataclass(frozen=True)
class Request:
    """Nothing to ask: the pin says which venv."""


def request(args: argparse.Namespace) -> Request:
    return Request()


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """The venv's python."""
    env = ensure_testenv(cfg, tree_for_tests(cfg, dest=None, pristine=False))
    return Outcome(code=EXITS.code("ready"), out=str(env.python))
