# SPDX-License-Identifier: Apache-2.0
"""A line: one pinned upstream and the patch series carried over it.

Loaded once per command (as StGit's ``Stack::from_branch`` loads a stack):
its ``fork.toml``, pin, series, fixes and workdir. Services take a
:class:`Line` (or the :class:`~forkkit.patches.fixes.Fix` or pin they need),
never the raw config; a rebase proves its result on ``line.at(...)``, the
same line over another upstream and series, not on a config made by hand.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from forkkit.config import ForkConfig, TestEnvSpec
from forkkit.fork.fixes import FixSet, load_fixes
from forkkit.fork.seriesfiles import load_series, read_pending
from forkkit.patches.fixes import Fix, FixDecl
from forkkit.patches.pending import PENDING_FILE, Pending
from forkkit.patches.series import Patch, Series
from forkkit.pin import GitPin, SdistPin, UpstreamSpec
from forkkit.workdir import Workdir


@dataclass(frozen=True, kw_only=True)
class Line:
    """One line of the fork: read once, its series and fixes derived once
    (on first use, so a command that needs neither never parses them)."""

    config: ForkConfig
    # patches tried after the series: the pending ones a rebase tries again
    extra: tuple[Patch, ...] = ()

    @classmethod
    def of(cls, config: ForkConfig) -> Line:
        return cls(config=config)

    @functools.cached_property
    def carried(self) -> Series:
        """The patch series ``series`` names, parsed once (one line for a bad
        patch)."""
        return load_series(self.config.series_file, self.config.patches_dir)

    @functools.cached_property
    def series(self) -> Series:
        """The carried series, then :attr:`extra` (when a rebase set it)."""
        if not self.extra:
            return self.carried
        h = hashlib.sha256(self.carried.digest.encode())
        for p in self.extra:
            h.update(f"\0{p.name}\0{p.sha256}".encode())
        return Series(patches=self.carried.patches + self.extra, digest=h.hexdigest())

    @functools.cached_property
    def pending(self) -> tuple[Pending, ...]:
        """The patches out of the series until a conflict is resolved
        (``patches/pending.toml``)."""
        return read_pending(self.config.patches_dir / PENDING_FILE)

    def with_extra(self, patches: Sequence[Patch]) -> Line:
        """This line with ``patches`` tried after its series."""
        return Line(config=self.config, extra=tuple(patches))

    @functools.cached_property
    def fixes(self) -> FixSet:
        """The fixes derived from the series and ``[[fix]]`` (once)."""
        return load_fixes(self.config, self.series)

    @functools.cached_property
    def carried_fixes(self) -> FixSet:
        """The fixes of the carried series alone (:attr:`fixes` without the
        :attr:`extra` patches)."""
        return load_fixes(self.config, self.carried) if self.extra else self.fixes

    def fix(self, fix_id: str | None) -> Fix:
        """The fix ``fix_id`` names (None: the only one, or the series)."""
        return self.fixes.one(fix_id)

    def patch(self, name: str) -> Patch:
        return self.fixes.patch(name)

    def at(self, upstream: UpstreamSpec, *, series_file: Path | None = None) -> Line:
        """This line over ``upstream`` (a rebase's target), with the series
        ``series_file`` names when given (the rebased one, its patches beside
        it): its fixes derived anew."""
        series_file = series_file or self.config.series_file
        config = replace(
            self.config,
            upstream=upstream,
            patches_dir=series_file.parent,
            series_file=series_file,
        )
        return Line(config=config)

    def without_fixes(self, ids: Collection[str]) -> Line:
        """This line with the ``[[fix]]`` tables of ``ids`` dropped (retired)."""
        decls = tuple(d for d in self.config.fixes if d.id not in ids)
        return Line(config=replace(self.config, fixes=decls), extra=self.extra)

    def with_upstream(self, **changes: str) -> Line:
        """This line with some upstream fields changed (checked as fork.toml's)."""
        return Line(config=self.config.with_upstream(**changes))

    @property
    def name(self) -> str:
        """How reports name the line: its name, or its upstream."""
        return self.config.line_label

    @property
    def path(self) -> Path:
        """The line's ``fork.toml``."""
        return self.config.path

    @property
    def root(self) -> Path:
        return self.config.root

    @property
    def upstream(self) -> UpstreamSpec:
        return self.config.upstream

    @property
    def pin(self) -> SdistPin | GitPin:
        return self.config.upstream.pin

    @property
    def work(self) -> Workdir:
        return self.config.work

    @property
    def patches_dir(self) -> Path:
        return self.config.patches_dir

    @property
    def series_file(self) -> Path:
        return self.config.series_file

    @property
    def decls(self) -> tuple[FixDecl, ...]:
        """The ``[[fix]]`` tables as written."""
        return self.config.fixes

    @property
    def testenv(self) -> TestEnvSpec:
        return self.config.testenv
