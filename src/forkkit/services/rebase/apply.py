# SPDX-License-Identifier: Apache-2.0
"""The refreshed series of ``forkkit rebase``, and ``--apply`` writing it back.

The rebase exports its result to ``<workdir>/rebase/out``. ``--apply`` then
writes it to patches/ and re-pins fork.toml in one transaction, and only
after the very bytes it writes are shown to rebuild the rebased tree exactly.
``#`` comments of ``series`` are kept; of the files in patches/, only old
series entries that the new series drops are deleted: any other ``*.patch``
is left alone.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from forkkit.errors import ForkkitError
from forkkit.fork.seriesfiles import read_retired
from forkkit.line import Line
from forkkit.output.progress import say, step
from forkkit.patches.pending import PENDING_FILE, Pending, render_pending
from forkkit.patches.retired import (
    RETIRED_FILE,
    Retired,
    merge_retired,
    render_retired,
)
from forkkit.patches.series import (
    parse_series_file,
    rewrite_series_text,
    series_entries,
)
from forkkit.txn import FileTransaction
from forkkit.vcs import Repo

SERIES = "series"


@dataclass(frozen=True)
class NewSeries:
    """The refreshed series in ``folder``, made from ``base..`` a rebased HEAD."""

    folder: Path  # <workdir>/rebase/out/patches
    names: tuple[str, ...]
    base: str  # the new upstream's base commit
    tree: str  # the rebased HEAD's tree: what the series must rebuild


def _drop_entries(text: str, dropped: set[str]) -> str:
    """``series`` text without the entry lines naming ``dropped`` patches."""
    gone = {n - 1 for n, name in series_entries(text) if name in dropped}
    lines = text.splitlines(keepends=True)
    return "".join(line for i, line in enumerate(lines) if i not in gone)


def export_new(
    repo: Repo,
    *,
    base: str,
    head: str,
    folder: Path,
    old_text: str,
    kept: Sequence[str],
) -> NewSeries:
    """Write ``base..head`` as patches plus a ``series`` into ``folder``.

    ``kept`` names the old entries still carried, in order (one per commit):
    the new series takes their lines, so comments stay beside their patch.
    """
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    names = tuple(p.name for p in repo.format_patch(f"{base}..{head}", folder))
    old = parse_series_file(old_text)
    text = old_text
    if len(kept) == len(names):  # else: the i-th entry line takes the i-th name
        text = _drop_entries(old_text, set(old) - set(kept))
    (folder / SERIES).write_text(rewrite_series_text(text, list(names)))
    new = NewSeries(folder=folder, names=names, base=base, tree=repo.tree(head))
    verify(repo, new)
    return new


def verify(repo: Repo, new: NewSeries) -> tuple[dict[str, bytes], bytes]:
    """The bytes of the new patches and ``series``, once they are shown to
    rebuild ``new.tree`` on ``new.base`` (a scratch index; no checkout)."""
    where = f"{new.folder}: nothing written;"
    series = (new.folder / SERIES).read_bytes()
    if tuple(parse_series_file(series.decode())) != new.names:
        raise ForkkitError(f"{where} its series does not list its patches; rerun")
    data = {name: (new.folder / name).read_bytes() for name in new.names}
    with (
        step("verifying that the new series rebuilds the rebased tree"),
        repo.scratch_index("rebase-verify") as index,
    ):
        index.read_tree(new.base)
        for name in new.names:
            result = index.apply(new.folder / name)
            if not result.ok:
                raise ForkkitError(
                    f"{where} {name} does not re-apply ({result.message}); "
                    "rerun the rebase"
                )
        tree = index.write_tree()
    changed = [n for n in new.names if (new.folder / n).read_bytes() != data[n]]
    if tree != new.tree or changed:
        raise ForkkitError(
            f"{where} the refreshed series does not rebuild the rebased tree "
            f"{new.tree[:12]} exactly; rerun the rebase"
        )
    return data, series


def unknown_patches(patches_dir: Path, series: Iterable[str]) -> list[Path]:
    """``*.patch`` files in ``patches_dir`` that the series does not name."""
    known = set(series)
    found = patches_dir.glob("*.patch") if patches_dir.is_dir() else []
    return sorted(p for p in found if p.name not in known and p.is_file())


def write_back(
    line: Line,
    repo: Repo,
    new: NewSeries,
    *,
    old: Sequence[str],
    toml: str,
    retired: Sequence[Retired] = (),
    pending: Sequence[Pending] = (),
) -> None:
    """Replace the series in patches/ and re-pin fork.toml: all or nothing.

    ``old`` is the series being replaced: of its entries, those the new
    series drops are deleted. A file the old series does not name is never
    deleted nor overwritten. ``retired`` (patches upstream absorbed) is added
    to ``patches/retired.toml`` in the same transaction; ``pending`` (the
    patches that wait, as they are) replaces ``patches/pending.toml``.
    """
    patches, series = verify(repo, new)
    clash = [p for p in unknown_patches(line.patches_dir, old) if p.name in new.names]
    if clash:
        raise ForkkitError(
            f"{clash[0]}: not in the series, and the new series has a patch of "
            "that name; nothing written: rename or move the file and rerun"
        )
    waits = {p.name for p in pending}
    if waits & set(new.names):
        name = sorted(waits & set(new.names))[0]
        raise ForkkitError(
            f"{line.patches_dir / name}: waits in {PENDING_FILE}, and the new "
            "series has a patch of that name; nothing written: rename the "
            "waiting patch (and its record) and rerun"
        )
    txn = FileTransaction(root=line.root)
    for name, data in patches.items():
        txn.write(line.patches_dir / name, data)
    for name in old:
        if name not in new.names and name not in waits:
            txn.delete(line.patches_dir / name)
    waiting = line.patches_dir / PENDING_FILE
    if pending:
        txn.write(waiting, render_pending(pending).encode())
    elif waiting.is_file():  # every patch that waited is back in the series
        txn.delete(waiting)
    txn.write(line.series_file, series)
    if retired:
        record = line.patches_dir / RETIRED_FILE
        earlier = read_retired(record)
        txn.write(record, render_retired(merge_retired(earlier, retired)))
    txn.write(line.path, toml)
    say(f"writing {len(new.names)} patch(es), {line.series_file.name} and fork.toml")
    txn.commit()
