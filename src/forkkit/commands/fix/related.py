# SPDX-License-Identifier: Apache-2.0
"""A fix's related suites that run: the upstream test modules that import a
module it changes, nearest first (:func:`~forkkit.commands.fix.model.ranked`),
without those that start an API server or load a model from the Hub (left
out by default, each named), and checked by one collection-only pytest run
in the CPU venv (:mod:`forkkit.testing.collect`): a module that cannot be
imported there is left out with the module it lacks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forkkit.commands.fix.model import (
    HUB_PATTERNS,
    SERVER_PATTERNS,
    import_patterns,
    ranked,
)
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.patches.fixes import Fix
from forkkit.patches.paths import is_test_module
from forkkit.testing.collect import Collected, collect_modules
from forkkit.testing.env import ensure_testenv
from forkkit.vcs import Repo

SUGGESTED = 12  # related suites suggested at most
CHECKED = 36  # candidates the collection run checks at most, nearest first
SERVER = "starts an API server"
HUB = "loads a model from the Hugging Face Hub"


@dataclass(frozen=True, kw_only=True)
class Suggestion:
    """The suggested suites, and every other candidate with why it is out."""

    kept: tuple[str, ...]
    left_out: tuple[tuple[str, str], ...]  # (module, why)
    found: int  # test modules that import a module the fix changes

    def lines(self) -> list[str]:
        """What ``fix add`` says of them: kept, then each reason's modules."""
        if not self.found:
            return []
        out = [
            f"  kept {len(self.kept)} of {self.found} test module(s) that import "
            "it, nearest first; left out:"
        ]
        groups: dict[str, list[str]] = {}
        for module, why in self.left_out:
            head, _, detail = why.partition(": ")
            groups.setdefault(head, []).append(
                f"{module} ({detail})" if detail else module
            )
        out += [f"    {why} ({len(m)}): {', '.join(m)}" for why, m in groups.items()]
        return out if groups else [*out[:1], "    none"]


def check_modules(
    cfg: ForkConfig, repo: Repo, *, head: str, base: str, modules: Sequence[str]
) -> dict[str, Collected]:
    """``modules`` collected in the CPU venv on ``head``'s tree (cached per
    venv and release: ``base``)."""
    if not modules:
        return {}
    with repo.worktree(head, "collect") as tree:
        env = ensure_testenv(cfg, tree.path)
        key = f"{env.key}:{repo.tree(base)}"
        return collect_modules(
            env,
            tree.path,
            modules,
            out_dir=cfg.work.runs / "collect",
            key=key,
            tree_id=repo.tree(head),
        )


def suggest(
    cfg: ForkConfig, repo: Repo, fix: Fix, *, head: str, base: str
) -> Suggestion:
    """The related suites ``fix add`` suggests for ``fix``."""
    found = repo.grep_files(base, import_patterns(fix.runtime_files), ["tests"])
    mine = set(fix.test_files)
    found = [f for f in found if is_test_module(f) and f not in mine]
    if not found:
        return Suggestion(kept=(), left_out=(), found=0)
    servers = set(repo.grep_files(base, SERVER_PATTERNS, found))
    hub = set(repo.grep_files(base, HUB_PATTERNS, found)) - servers
    order = ranked(
        found, runtime_files=fix.runtime_files, sizes=repo.sizes(base, found)
    )
    light = [f for f in order if f not in servers | hub]
    checked = check_modules(cfg, repo, head=head, base=base, modules=light[:CHECKED])
    runs = [f for f in light if f in checked and checked[f].runs]
    kept = runs[:SUGGESTED]
    left: list[tuple[str, str]] = []
    for f in order:
        if f in servers:
            left.append((f, SERVER))
        elif f in hub:
            left.append((f, HUB))
        elif f in checked and not checked[f].runs:
            cause = checked[f].cause
            left.append((f, f"cannot be collected: {cause}" if cause else "no test"))
        elif f not in kept:
            left.append((f, f"beyond the {SUGGESTED} nearest that run"))
    return Suggestion(kept=tuple(kept), left_out=tuple(left), found=len(found))


def check_given(
    cfg: ForkConfig, repo: Repo, suites: Sequence[str], *, head: str, base: str
) -> None:
    """One line for a suite the user names that does not exist at ``head``,
    or a test module that cannot be collected in the CPU venv."""
    have = repo.ls_tree(head, list(suites))
    for suite in suites:
        if suite not in have and not any(
            p.startswith(suite.rstrip("/") + "/") for p in have
        ):
            raise ForkkitError(
                f"related suite {suite!r}: not in the fork at {head[:12]}; give a "
                "test module or folder of the tree"
            )
    files = [s for s in suites if s.endswith(".py")]
    for suite, got in check_modules(
        cfg, repo, head=head, base=base, modules=files
    ).items():
        if got.cause:
            raise ForkkitError(
                f"related suite {suite}: cannot be collected in the CPU venv "
                f"({got.cause}); leave it out, or add what it needs to "
                "[testenv] extra"
            )
