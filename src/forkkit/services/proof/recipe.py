# SPDX-License-Identifier: Apache-2.0
"""How red's tree is made, as a typed value (pure: no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

RecipeKind = Literal["revert-hunks", "runtime-from", "guard"]


@dataclass(frozen=True)
class RedRecipe:
    """How red's tree is made from the fork's HEAD, as a value every reader
    takes from the report (never from a label):

    - ``revert-hunks``: HEAD with the runtime hunks of fix ``fix`` reversed,
      every other fix kept (the default);
    - ``runtime-from``: HEAD with the runtime files of commit ``rev`` (the
      upstream base, or ``--base``/``--base-patch``);
    - ``guard``: no red: the fix carries only tests, run on HEAD.
    """

    kind: RecipeKind
    fix: str = ""
    rev: str = ""

    @classmethod
    def revert_hunks(cls, fix: str) -> RedRecipe:
        return cls("revert-hunks", fix=fix)

    @classmethod
    def runtime_from(cls, rev: str) -> RedRecipe:
        return cls("runtime-from", rev=rev)

    @classmethod
    def guard(cls) -> RedRecipe:
        return cls("guard")

    @property
    def built(self) -> bool:
        """Red is a tree of its own, built per run (hunks reversed)."""
        return self.kind == "revert-hunks"


# a report with no recipe: red took the runtime files of its base commit
RUNTIME_FROM_BASE = RedRecipe("runtime-from")
