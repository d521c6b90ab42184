# SPDX-License-Identifier: Apache-2.0
"""``forkkit fetch``: download and verify the pinned sdist; print its path."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Literal

from forkkit.config import ForkConfig
from forkkit.output.outcome import Outcome
from forkkit.output.verdicts import ExitTable
from forkkit.upstream.sdist import fetch_sdist

Verdict = Literal["fetched"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={"fetched": (0, "the sdist is cached, its sha256 verified; its path")},
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options of its own."""


@dataclass(frozen=True)
class Request:
    """Nothing to ask: the pin says what to fetch."""


def request(args: argparse.Namespace) -> Request:
    return Request()


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """The verified sdist's path."""
    return Outcome(
        code=EXITS.code("fetched"),
        out=str(fetch_sdist(cfg.upstream, cfg.work.sdist_cache)),
    )
