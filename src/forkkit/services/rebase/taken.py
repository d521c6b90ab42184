# SPDX-License-Identifier: Apache-2.0
"""Where upstream took each absorbed patch. On a git upstream (both pins
commits of one repository) the first commit between the old pin and the
new one that has the patch's runtime change (it reverse-applies as it is)
is found by bisection over the first-parent history; the retirement record
names it, not the rebase's target. Elsewhere (releases) the target stays."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.output.progress import say
from forkkit.patches.paths import is_runtime_path
from forkkit.pin import GitPin
from forkkit.services.bisect.model import Step, first_absorbed, pr_number
from forkkit.services.rebase.model import PatchResult
from forkkit.vcs import Repo, fetch_history, fetch_rev
from forkkit.vcs.overlay import has_changes

_REF = "refs/forkkit/rebase-target"


def _history(
    repo: Repo, old: GitPin, new: GitPin, *, commits: tuple[str, str]
) -> list[str]:
    """The first-parent commits after the old pin's up to the new one's
    (fetched), or [] when they are not one repository's history."""
    if not old.url or old.url != new.url:
        return []
    try:
        good = fetch_rev(repo, url=old.url, rev=commits[0])
        bad = fetch_history(repo, url=new.url, rev=commits[1], ref=_REF)
    except ForkkitError as exc:
        say(f"where upstream took each absorbed patch: not searched ({exc})")
        return []
    if not repo.is_ancestor(good, bad):
        return []
    return repo.commits(f"{good}..{bad}", first_parent=True)


def _first(repo: Repo, history: Sequence[str], diff: str) -> str:
    """``applied_upstream`` of the first commit of ``history`` that has the
    change ``diff`` ("" when none has it: the patch was taken otherwise)."""

    def probe(commit: str) -> Step:
        has, _ = has_changes(repo, commit, (diff,))
        subject = repo.message(commit).split("\n", 1)[0]
        return Step(commit, subject, has, (), ())

    found = first_absorbed(history, probe)
    if found.index is None:
        return ""
    first = next(s for s in found.steps if s.commit == history[found.index])
    pr = pr_number(first.subject)
    return f"{first.commit[:12]}" + (f" (#{pr})" if pr is not None else "")


def first_taken(
    repo: Repo,
    results: Sequence[PatchResult],
    *,
    pins: tuple[GitPin, GitPin],
    commits: tuple[str | None, str | None],
    history_repo: Path,
) -> dict[str, str]:
    """Patch name -> the first commit that took it, for each absorbed patch
    whose runtime change some commit between the two pins has (``repo``:
    the rebase's; the history is fetched into ``history_repo``, a
    repository of its own: the rebase's holds the pins without history)."""
    absorbed = [p for p in results if p.absorbed and p.old_commit]
    old, new = commits
    if not absorbed or not old or not new:
        return {}
    if Repo.is_repo_root(history_repo):
        hist = Repo(history_repo)
    else:
        hist = Repo.init(history_repo)
    history = _history(hist, *pins, commits=(old, new))
    if not history:
        return {}
    out: dict[str, str] = {}
    for p in absorbed:
        changed = repo.changed_paths(f"{p.old_commit}^", p.old_commit)
        runtime = [f for f in changed if is_runtime_path(f)]
        if runtime:
            diff = repo.diff(a=f"{p.old_commit}^", b=p.old_commit, paths=runtime)
            where = _first(hist, history, diff)
            if where:
                say(f"{p.name}: upstream took it in {where}")
                out[p.name] = where
    return out
