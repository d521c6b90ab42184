# SPDX-License-Identifier: Apache-2.0
"""``forkkit init NAME==VERSION`` (a release) or ``forkkit init --git URL
--rev REV`` (a git revision, resolved to its commit): a new project, whose
test venv gets the torch of the upstream's own CPU build."""

from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from forkkit.commands.init.model import (
    EXITS,
    SERIES,
    Pin,
    fork_toml,
    git_upstream,
    sdist_upstream,
)
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.output.outcome import Outcome
from forkkit.pin import (
    GitPin,
    UpstreamSpec,
    check_git_rev,
    check_git_url,
    check_url,
    path_component,
)
from forkkit.txn import FileTransaction, checkout_lock
from forkkit.upstream.git import fetch_git_rev
from forkkit.upstream.release import release_version
from forkkit.upstream.sdist import fetch_sdist, read_member
from forkkit.upstream.torchpin import TorchPin, release_torch
from forkkit.upstream.trust import trusted_sdist
from forkkit.vcs import Repo
from forkkit.workdir import Workdir

PYPI = "https://pypi.org/simple"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The release, where the project goes, the index."""
    parser.description = (
        "Start a project: fork.toml pinning NAME==VERSION (its sdist's sha256 "
        "looked up on the index and written for you), an empty patches/series, "
        "and the CPU test environment; then 'forkkit fix add'."
    )
    parser.add_argument(
        "release", nargs="?", help="e.g. vllm==0.34.0 (or --git URL --rev REV)"
    )
    parser.add_argument("--git", metavar="URL", help="pin a git revision of URL")
    parser.add_argument(
        "--rev", metavar="REV", help="with --git: the branch, tag or commit"
    )
    parser.add_argument(
        "--name", help="with --git: the upstream's name (default: the URL's last part)"
    )
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
    version: str  # "" with a git pin
    folder: Path
    index_url: str
    sha256: str
    git: GitPin | None = None  # --git URL --rev REV (its commit not yet known)


def _git_request(args: argparse.Namespace) -> Request:
    if args.release or args.sha256:
        raise ForkkitError(
            "forkkit init: give a release (NAME==VERSION) or --git URL --rev REV, "
            "not both"
        )
    if not args.rev:
        raise ForkkitError("forkkit init --git: give the revision too (--rev REV)")
    url = check_git_url(args.git, "--git")
    name = args.name or url.rstrip("/").rsplit("/", 1)[-1].removesuffix(".git")
    name = path_component(name, what="--name (the upstream's name)")
    return Request(
        name=name,
        version="",
        folder=args.dir,
        index_url=check_url(args.index_url, "--index-url"),
        sha256="",
        git=GitPin(url=url, rev=check_git_rev(args.rev, "--rev")),
    )


def request(args: argparse.Namespace) -> Request:
    if args.git:
        return _git_request(args)
    if args.rev or args.name:
        raise ForkkitError("forkkit init: --rev and --name go with --git URL")
    release = args.release or ""
    name, sep, _ = release.partition("==")
    if not sep or not name:
        raise ForkkitError(
            f"{release!r}: give the release as NAME==VERSION, e.g. vllm==0.34.0 "
            "(or --git URL --rev REV)"
        )
    return Request(
        name=name,
        version=release_version(release, name=name, option="init", bare=True),
        folder=args.dir,
        index_url=check_url(args.index_url, "--index-url"),
        sha256=args.sha256,
    )


def _sdist(req: Request, work: Workdir) -> tuple[str, TorchPin, str, str]:
    """The release's ``[upstream]``, its torch, the pin line and the trust."""
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
    archive = fetch_sdist(sdist.spec, work.sdist_cache)  # materialize reuses it
    torch = release_torch(
        lambda path: read_member(archive, path), release=f"{req.name} {req.version}"
    )
    said = f"pins {req.name} {req.version} (sha256 {pin.sha256})"
    return sdist_upstream(pin), torch, said, sdist.trust


def _git(req: Request, git: GitPin, work: Workdir) -> tuple[str, TorchPin, str, str]:
    """The revision's ``[upstream]`` (its commit fetched), its torch, the pin
    line and the trust."""
    work.ensure()
    with tempfile.TemporaryDirectory(dir=work.root, prefix="init-") as tmp:
        repo = Repo.init(Path(tmp), bare=True)
        commit = fetch_git_rev(repo, git.url, git.rev)

        def read(path: str) -> str | None:
            blob = repo.blob(commit, path)
            return repo.read_blob(blob).decode("utf-8", "replace") if blob else None

        torch = release_torch(read, release=f"{req.name} {commit[:12]}")
    pin = GitPin(url=git.url, rev=git.rev, commit=commit)
    said = f"pins {req.name} {git.rev} at commit {commit}"
    return git_upstream(req.name, pin), torch, said, pin.trust


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
    # where materialize will look (FORKKIT_WORKDIR relocates it), so the
    # sdist fetched here is the one it uses
    work = Workdir(Path(os.environ.get("FORKKIT_WORKDIR") or folder / ".forkkit"))
    made = _git(req, req.git, work) if req.git else _sdist(req, work)
    upstream, torch, said, trust = made
    with checkout_lock(folder):
        txn = FileTransaction(folder)
        txn.write(toml, fork_toml(upstream=upstream, torch=torch))
        txn.write(series, SERIES)
        txn.commit()
    lines = [
        f"{toml}: {said}",
        f"test venv: {torch.spec} ({torch.source})",
        f"next: forkkit --config {toml} fix add ID PATCH... (git format-patch files "
        "or a plain diff)",
    ]
    return Outcome(code=EXITS.code("started"), out="\n".join(lines), notes=(trust,))
