# SPDX-License-Identifier: Apache-2.0
"""``forkkit init NAME==VERSION``: a new project over a release."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from forkkit.commands.init.model import EXITS, SERIES, Pin, fork_toml
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.output.outcome import Outcome
from forkkit.pin import UpstreamSpec, check_url
from forkkit.txn import FileTransaction, checkout_lock
from forkkit.upstream.release import release_version
from forkkit.upstream.trust import trusted_sdist

PYPI = "https://pypi.org/simple"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The release, where the project goes, the index."""
    parser.description = (
        "Start a project: fork.toml pinning NAME==VERSION (its sdist's sha256 "
        "looked up on the index and written for you), an empty patches/series, "
        "and the CPU test environment; then 'forkkit fix add'."
    )
    parser.add_argument("release", help="e.g. vllm==0.34.0")
    parser.add_argument(
        "--dir", type=Path, default=Path("."), help="the project folder (default: .)"
    )
    parser.add_argument("--index-url", default=PYPI, help=f"default: {PYPI}")
    parser.add_argument(
        "--sha256", default="", help="pin this sha256 (checked against the index)"
    )


@dataclass(frozen=True, kw_only=True)
class Request:
    name: str
    version: str
    folder: Path
    index_url: str
    sha256: str


def request(args: argparse.Namespace) -> Request:
    name, sep, _ = args.release.partition("==")
    if not sep or not name:
        raise ForkkitError(
            f"{args.release!r}: give the release as NAME==VERSION, e.g. vllm==0.34.0"
        )
    return Request(
        name=name,
        version=release_version(args.release, name=name, option="init", bare=True),
        folder=args.dir,
        index_url=check_url(args.index_url, "--index-url"),
        sha256=args.sha256,
    )


def run(cfg: ForkConfig | None, req: Request) -> Outcome:
    """Write the project; what to do next. ``cfg``: none (there is none yet)."""
    folder = req.folder.absolute()
    toml, series = folder / "fork.toml", folder / "patches" / "series"
    for path in (toml, series):
        if path.exists():
            raise ForkkitError(
                f"{path}: exists already; forkkit init starts a new project, in "
                "an empty folder (or pass --dir)"
            )
    up = UpstreamSpec(name=req.name, source="sdist", index_url=req.index_url)
    sdist = trusted_sdist(
        up,
        version=req.version,
        sha256=req.sha256,
        pin_hint="forkkit init NAME==VERSION --sha256 HEX",
        tofu_note="review it before you commit fork.toml",
    )
    pin = Pin(
        name=req.name,
        version=req.version,
        sha256=sdist.spec.release.sha256,
        index_url=req.index_url,
        trust=sdist.trust,
    )
    folder.mkdir(parents=True, exist_ok=True)
    with checkout_lock(folder):
        txn = FileTransaction(folder)
        txn.write(toml, fork_toml(pin))
        txn.write(series, SERIES)
        txn.commit()
    lines = [
        f"{toml}: pins {req.name} {req.version} (sha256 {pin.sha256})",
        f"next: forkkit --config {toml} fix add ID PATCH... (git format-patch files)",
    ]
    return Outcome(
        code=EXITS.code("started"), out="\n".join(lines), notes=(sdist.trust,)
    )
