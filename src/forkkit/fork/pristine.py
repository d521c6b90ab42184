# SPDX-License-Identifier: Apache-2.0
"""A verified upstream as one pristine root commit in a repository.

The one way a release becomes a commit, whatever it is for (our base, a
rebase target, a release competitor): the sdist is downloaded and checked
against its sha256 (:mod:`forkkit.upstream.sdist`), extracted, and its files
committed whole; a git revision is fetched. The commit is recorded under
``refs/forkkit/pin/`` by the spec's identifier (name, version and sha256),
so the same verified upstream is committed once per repository.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.fork import state as forkstate
from forkkit.output.progress import step
from forkkit.pin import GitPin, SdistPin, UpstreamSpec
from forkkit.upstream.git import fetch_git_rev
from forkkit.upstream.sdist import (
    EXTRACT_MANIFEST,
    EXTRACT_MARKER,
    extract_sdist,
    fetch_sdist,
)
from forkkit.vcs import Repo
from forkkit.workdir import Workdir

_TRAILER = "Forkkit-Upstream"
_COMMIT_TRAILER = "Forkkit-Upstream-Commit"


@dataclass(frozen=True)
class Pristine:
    """The root commit of a pristine upstream tree."""

    commit: str
    upstream_commit: str | None  # the upstream git commit (git source only)


def tree_of_directory(repo: Repo, src: Path) -> str:
    """Write every file under ``src`` (an extracted sdist) as a git tree object.

    A scratch index leaves the repository's own index and work tree alone;
    sdists ship files their .gitignore names, so ignore rules do not apply.
    """
    with repo.scratch_index("tree") as index:
        index.add_directory(src, exclude=(EXTRACT_MARKER, EXTRACT_MANIFEST))
        return index.write_tree()


def pristine_commit(repo: Repo, *, spec: UpstreamSpec, work: Workdir) -> Pristine:
    """The pristine commit of ``spec`` in ``repo``: the one recorded for it,
    else one made from the verified upstream (and recorded)."""
    commit = forkstate.pinned_base(repo, spec.ident)
    if commit is None:
        commit = _new_commit(repo, spec=spec, work=work)
        forkstate.record_pin(repo, ident=spec.ident, base=commit)
    m = re.search(rf"^{_COMMIT_TRAILER}: (\w+)$", repo.message(commit), re.M)
    return Pristine(commit, m.group(1) if m else None)


def resolved(repo: Repo, spec: UpstreamSpec) -> UpstreamSpec:
    """``spec`` with its git commit known: a revision given without one (a
    ``--rev`` on the command line) is fetched once and named by its commit,
    so a branch never stands for whatever it pointed at first."""
    return spec.match(_Resolved(repo, spec))


@dataclass(frozen=True)
class _Resolved:
    repo: Repo
    spec: UpstreamSpec

    def sdist(self, pin: SdistPin) -> UpstreamSpec:
        return self.spec  # a sha256 names its content already

    def git(self, pin: GitPin) -> UpstreamSpec:
        if pin.commit:
            return self.spec
        commit = fetch_git_rev(self.repo, pin.url, pin.rev)
        return replace(self.spec, git=replace(pin, commit=commit))


@dataclass(frozen=True)
class _Made:
    """A pristine tree written into the repository, and where it came from."""

    tree: str
    origin: str
    upstream_commit: str = ""


@dataclass(frozen=True)
class _Make:
    """Each kind of pin's pristine tree: a verified sdist's files, or a
    fetched commit's tree."""

    repo: Repo
    spec: UpstreamSpec
    work: Workdir

    def sdist(self, pin: SdistPin) -> _Made:
        spec, work = self.spec, self.work
        archive = fetch_sdist(spec, work.sdist_cache)
        src = extract_sdist(archive, work.upstream(spec.name, pin.version), pin.sha256)
        with step(f"committing pristine {spec.label} ({archive.name})"):
            tree = tree_of_directory(self.repo, src)
        return _Made(tree, f"{archive.name} (sha256 {pin.sha256})")

    def git(self, pin: GitPin) -> _Made:
        commit = fetch_git_rev(self.repo, pin.url, pin.at)
        if pin.commit and commit != pin.commit:
            raise ForkkitError(
                f"{pin.url}: fetching {pin.commit} gave {commit}; "
                "check git_commit in fork.toml"
            )
        return _Made(self.repo.tree(commit), f"{pin.url} at {commit}", commit)


def _new_commit(repo: Repo, *, spec: UpstreamSpec, work: Workdir) -> str:
    made = spec.match(_Make(repo, spec, work))
    msg = (
        f"Upstream {spec.label} (pristine)\n\n"
        f"Pristine tree of {made.origin}.\n\n{_TRAILER}: {spec.ident}\n"
    )
    if made.upstream_commit:
        msg += f"{_COMMIT_TRAILER}: {made.upstream_commit}\n"
    return repo.commit_tree(tree=made.tree, message=msg)
