# SPDX-License-Identifier: Apache-2.0
"""``rebase.json`` as pr-body reads it: the types of what
:meth:`forkkit.services.rebase.model.RebaseResult.to_json` writes (the
fields a reader uses; others are ignored). Pure."""

from __future__ import annotations

from dataclasses import dataclass

from forkkit.patches.retired import Retired


@dataclass(frozen=True)
class RebaseDoc:
    """A rebase: from which pin to which release, and what upstream absorbed."""

    old: str = ""  # the pin it started from, e.g. "vllm 0.30.0"
    new: str = ""  # the release it moved onto
    can_retire: bool = False  # upstream has every patch
    written: bool = False  # --apply wrote the new series
    retired: tuple[Retired, ...] = ()  # the patches that left the series
