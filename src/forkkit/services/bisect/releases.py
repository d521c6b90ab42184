# SPDX-License-Identifier: Apache-2.0
"""Releases as a line of commits, for a bisection over releases.

Every release on the index after an sdist pin, up to a given one, becomes one
commit whose tree is its verified sdist (the pristine commit every other
command makes of it) and whose parent is the release before: the same search
then walks releases as it walks a branch's commits. Each commit's subject is
the release (``vllm 0.31.0``), which is what ``patches/retired.toml`` records
as ``applied_upstream``.
"""

from __future__ import annotations

from forkkit.errors import ForkkitError
from forkkit.fork.pristine import pristine_commit
from forkkit.line import Line
from forkkit.output.progress import step
from forkkit.upstream.index import sdist_versions
from forkkit.upstream.release import newer_releases, release_version
from forkkit.upstream.trust import trusted_sdist
from forkkit.vcs import Repo


def release_chain(line: Line, repo: Repo, *, until: str) -> tuple[str, str, list[str]]:
    """The pin's commit, the last release's, and one commit per release after
    the pin up to ``until`` (oldest first), made in ``repo``."""
    up = line.upstream
    pin = up.release.version
    last = release_version(until, name=up.name, option="--until", bare=True)
    if not newer_releases([last], pin):
        raise ForkkitError(
            f"--until {until}: not a final release after the pin {pin}; name one"
        )
    with step(f"listing the releases of {up.name} on {up.index_url}"):
        listed = newer_releases(sdist_versions(up.name, up.index_url), pin)
    if last not in listed:
        raise ForkkitError(f"--until {until}: no sdist of it on {up.index_url}")
    chain = [v for v in reversed(listed) if not newer_releases([v], last)]
    prev = pristine_commit(repo, spec=up, work=line.work).commit
    good, commits = prev, []
    for version in chain:
        sdist = trusted_sdist(
            up,
            version=version,
            pin_hint=f"forkkit bisect --until {up.name}=={version} (pin it first)",
            tofu_note="a bisection over releases",
        )
        made = pristine_commit(repo, spec=sdist.spec, work=line.work).commit
        prev = repo.commit_tree(
            tree=repo.tree(made),
            message=f"{up.name} {version}\n\nRelease {version}: {sdist.trust}\n",
            parents=[prev],
        )
        commits.append(prev)
    return good, prev, commits
