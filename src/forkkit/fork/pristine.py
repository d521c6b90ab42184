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
from forkkit.pin import UpstreamSpec
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
    pin = spec.on_git
    if pin is None or pin.commit:
        return spec
    commit = fetch_git_rev(repo, pin.url, pin.rev)
    return replace(spec, git=replace(pin, commit=commit))


def _new_commit(repo: Repo, *, spec: UpstreamSpec, work: Workdir) -> str:
    upstream_commit: str | None = None
    pin = spec.on_git
    if pin is not None:
        upstream_commit = fetch_git_rev(repo, pin.url, pin.at)
        if pin.commit and upstream_commit != pin.commit:
            raise ForkkitError(
                f"{pin.url}: fetching {pin.commit} gave {upstream_commit}; "
                "check git_commit in fork.toml"
            )
        tree = repo.tree(upstream_commit)
        origin = f"{pin.url} at {upstream_commit}"
    else:
        release = spec.release
        archive = fetch_sdist(spec, work.sdist_cache)
        src = extract_sdist(
            archive, work.upstream(spec.name, release.version), release.sha256
        )
        with step(f"committing pristine {spec.label} ({archive.name})"):
            tree = tree_of_directory(repo, src)
        origin = f"{archive.name} (sha256 {release.sha256})"
    msg = (
        f"Upstream {spec.label} (pristine)\n\n"
        f"Pristine tree of {origin}.\n\n{_TRAILER}: {spec.ident}\n"
    )
    if upstream_commit:
        msg += f"{_COMMIT_TRAILER}: {upstream_commit}\n"
    return repo.commit_tree(tree=tree, message=msg)
