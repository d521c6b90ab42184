# SPDX-License-Identifier: Apache-2.0
"""The fork tree's state, kept in git itself and written only when a build ends.

- ``refs/forkkit/state``: a blob with the state JSON of the last *completed*
  build; ``refs/forkkit/built`` points at that build's HEAD (keeping it alive).
- ``refs/forkkit/building``: present while a build (or an export's rebuild)
  runs. A build killed at any point, by kill -9 too, leaves it behind, so the
  next command knows the tree is forkkit's own unfinished work. Its marker
  says whether the build got as far as the work tree, and from which commit
  to which: only the files that move could be the build's own writes; any
  other change in the tree is the user's (:class:`Building`).
- ``refs/forkkit/pin/<id>``: the base commit made from a verified upstream.

Exactly one of ``state`` and ``building`` exists once forkkit touched a tree;
each change of them is one atomic ``update-ref`` transaction.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from forkkit.vcs import ZERO, GitError, RefUpdate, Repo

STATE_REF = "refs/forkkit/state"
BUILT_REF = "refs/forkkit/built"
BUILDING_REF = "refs/forkkit/building"
PIN_PREFIX = "refs/forkkit/pin/"
LEGACY_STATE_FILE = "forkkit-state.json"


@dataclass(frozen=True)
class ForkTree:
    """A materialized fork: where it is and what each commit holds."""

    path: Path
    upstream: str  # UpstreamSpec.ident
    upstream_label: str
    upstream_commit: str | None  # the upstream git commit (git-source mode)
    base: str  # our root commit: the pristine tree
    base_tree: str
    head: str
    series_digest: str
    patch_commits: tuple[tuple[str, str], ...]  # (patch name, commit)
    stopped_at: str | None = None  # the patch that did not apply, if any

    @property
    def repo(self) -> Repo:
        """The fork tree's repository."""
        return Repo(self.path)

    @classmethod
    def from_state(cls, path: Path, state: dict[str, Any]) -> ForkTree:
        """Rebuild from recorded state (KeyError/TypeError if incomplete)."""
        skip = ("path", "patch_commits", "stopped_at")
        names = [f.name for f in fields(cls) if f.name not in skip]
        values: dict[str, Any] = {name: state[name] for name in names}
        values["stopped_at"] = state.get("stopped_at")
        commits = tuple((str(n), str(c)) for n, c in state["patch_commits"])
        return cls(path=path, patch_commits=commits, **values)

    def to_json(self) -> dict[str, object]:
        """The state as JSON-able data (``path`` included)."""
        d = asdict(self)
        d["path"] = str(self.path)
        return d


@dataclass(frozen=True)
class Recorded:
    """What forkkit recorded in a repository (all None: not a forkkit tree)."""

    tree: ForkTree | None  # the last completed build
    building: str | None  # the marker blob of an unfinished build
    legacy: bool = False  # a state file of an older forkkit
    recorded: bool = False  # a state ref exists (readable or not)

    @property
    def ours(self) -> bool:
        """Whether forkkit's records prove it built this repository."""
        return self.recorded or self.building is not None or self.legacy


def read(repo: Repo) -> Recorded:
    """What forkkit recorded in ``repo`` (refs first, then a legacy file)."""
    building = repo.object_id(BUILDING_REF)
    blob = repo.object_id(STATE_REF)
    tree = _parse(repo, repo.read_blob(blob).decode()) if blob else None
    legacy = False
    if blob is None and building is None:
        legacy_file = repo.git_dir() / LEGACY_STATE_FILE
        legacy = legacy_file.is_file()
        if legacy:  # an older forkkit's side file: its head still counts
            try:
                tree = _parse(repo, legacy_file.read_text())
            except (OSError, UnicodeDecodeError):
                tree = None
    return Recorded(
        tree=tree, building=building, legacy=legacy, recorded=blob is not None
    )


def _parse(repo: Repo, text: str) -> ForkTree | None:
    try:
        return ForkTree.from_state(repo.path, json.loads(text))
    except (KeyError, TypeError, ValueError):
        return None  # a state of another forkkit version: rebuild


@dataclass(frozen=True)
class Building:
    """What an unfinished build may have written in the work tree."""

    touched: bool  # it got as far as rewriting the work tree
    moved: tuple[str, str] | None = None  # (from HEAD, to base) of its checkout

    @classmethod
    def of(cls, text: str) -> Building:
        """Read a marker (one written before the phases were: touched)."""
        for line in text.splitlines():
            if line.startswith("worktree:"):
                parts = line.split()
                moved = (parts[2], parts[4]) if len(parts) == 5 else None
                return cls(touched=True, moved=moved)
        return cls(touched="phase: prepare" not in text)


def building(repo: Repo, marker: str) -> Building:
    """The phase of the unfinished build whose marker blob is ``marker``."""
    return Building.of(repo.read_blob(marker).decode(errors="replace"))


def start_build(repo: Repo, *, what: str) -> str:
    """Mark a build as started (dropping the completed state); return the
    marker. Until :func:`touch_worktree`, the build writes no file of the
    work tree."""
    marker = repo.write_blob(f"forkkit build in progress: {what}\nphase: prepare\n")
    repo.update_refs(
        [
            RefUpdate(ref=BUILDING_REF, new=marker),
            RefUpdate(ref=STATE_REF, new=""),
            RefUpdate(ref=BUILT_REF, new=""),
        ]
    )
    (repo.git_dir() / LEGACY_STATE_FILE).unlink(missing_ok=True)
    return marker


def touch_worktree(repo: Repo, *, marker: str, to: str) -> str:
    """Say, before the build's first write to the work tree, that it now moves
    it from HEAD to ``to``; return the new marker."""
    head = repo.rev("HEAD")
    what = repo.read_blob(marker).decode(errors="replace").splitlines()[0]
    moved = f"worktree: from {head} to {to}" if head else "worktree: from nothing"
    new = repo.write_blob(f"{what}\n{moved}\n")
    repo.update_refs([RefUpdate(ref=BUILDING_REF, new=new, old=marker)])
    return new


def finish_build(repo: Repo, tree: ForkTree, *, marker: str) -> None:
    """Record ``tree`` as the completed build, in one transaction."""
    data = tree.to_json()
    data.pop("path")
    blob = repo.write_blob(json.dumps(data, indent=2, sort_keys=True) + "\n")
    repo.update_refs(
        [
            RefUpdate(ref=STATE_REF, new=blob, old=ZERO),
            RefUpdate(ref=BUILT_REF, new=tree.head, old=ZERO),
            RefUpdate(ref=BUILDING_REF, new="", old=marker),
        ]
    )


def pin_ref(ident: str) -> str:
    """The ref that records the base commit made from upstream ``ident``."""
    return PIN_PREFIX + hashlib.sha256(ident.encode()).hexdigest()[:32]


def record_pin(repo: Repo, *, ident: str, base: str) -> None:
    """Record ``base`` as made from the verified upstream ``ident``."""
    repo.update_refs([RefUpdate(ref=pin_ref(ident), new=base)])


def pinned_base(repo: Repo, ident: str) -> str | None:
    """The base commit recorded for ``ident``, if any."""
    try:
        return repo.rev(pin_ref(ident))
    except GitError:
        return None
