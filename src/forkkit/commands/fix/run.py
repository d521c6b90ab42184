# SPDX-License-Identifier: Apache-2.0
"""``forkkit fix add``: bring a new fix into the series in one step.

The patches (git format-patch files, or an mbox of several) get the trailer
``Forkkit-Fix: ID``, are numbered after the series, and must apply on the
fork's HEAD (base + the current series) in a scratch index, so the new
series rebuilds a tree; the fix is then derived from them (its runtime files
and tests) and related suites are suggested (the upstream test modules that
import a module it changes). Only then are the patches, ``patches/series``
and the new ``[[fix]]`` of ``fork.toml`` written, in one transaction.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from forkkit.commands.fix.model import (
    NewFix,
    fix_table,
    numbered,
    split_mails,
    with_fix_trailer,
    with_related,
    with_table,
)
from forkkit.commands.fix.related import Suggestion, check_given, suggest
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.seriesfiles import load_series, read_series_text
from forkkit.fork.tree import apply_failure, materialize
from forkkit.patches.fixes import Fix, FixDecl, assign
from forkkit.patches.plaindiff import (
    Import,
    check_plain,
    is_mail,
    part_mail,
    parts,
    raw_hunk,
    unlabelled,
)
from forkkit.patches.series import (
    Patch,
    Series,
    parse_patch_text,
    rewrite_series_text,
)
from forkkit.txn import FileTransaction
from forkkit.vcs import Repo
from forkkit.vcs.apply import ApplyResult

AS_IS = Import()  # a plain diff: one patch, the default author and message


@dataclass(frozen=True)
class Added:
    """The fix as written: derived from its patches."""

    fix: Fix
    suggestion: Suggestion | None  # None: the suites were given


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ForkkitError(
            f"{path}: no such patch file; give a git format-patch file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ForkkitError(
            f"{path}: cannot read it as UTF-8 ({exc}); fix the file"
        ) from None


def _slug(subject: str) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", "-", subject).strip("-")
    return f"{words[:52].rstrip('-') or 'patch'}.patch"


def _mails(
    files: Sequence[Path], fix_id: str, *, first: int, plain: _Plain
) -> list[tuple[str, str]]:
    """``(file name, text)`` of every new patch, trailer added, numbered: a
    plain diff's through ``plain`` (its parts)."""
    out: list[tuple[str, str]] = []
    for src in files:
        raw = _read(src)
        if is_mail(raw):
            mails = [("", m) for m in split_mails(raw, where=str(src))]
        else:
            mails = plain(raw, src)
        for hint, mail in mails:
            text = with_fix_trailer(mail, fix_id, where=str(src))
            if len(mails) == 1:
                name = src.name
            else:
                name = _slug(hint or parse_patch_text(text, src).subject)
            out.append((numbered(name, first + len(out)), text))
    return out


_Plain = Callable[[str, Path], list[tuple[str, str]]]


def _plain(repo: Repo, head: str, *, how: Import, label: str) -> _Plain:
    """A plain diff's parts as mails: git reads it onto ``head`` (``-p1``,
    else ``-p0``) in a scratch index, and each part of what it gives is
    diffed back out (a rename: a deletion and an addition)."""

    def parts_of(text: str, src: Path) -> list[tuple[str, str]]:
        check_plain(text, where=str(src))
        text = unlabelled(text)
        new, tried = repo.tree_with(head, text)
        if new is None:
            raise _raw_failure(src, text, tried=tried, label=label)
        cut = parts(repo.files_changed(head, new), how.split)
        if not cut[0].paths:
            raise ForkkitError(f"{src}: changes nothing on {label}; nothing to add")
        return [
            (
                part.name,
                part_mail(
                    repo.diff(a=head, b=new, paths=part.paths, renames=False),
                    how=how,
                    source=src.name,
                    part=part,
                    index=(i, len(cut)),
                ),
            )
            for i, part in enumerate(cut, 1)
        ]

    return parts_of


def _raw_failure(
    src: Path, text: str, *, tried: Sequence[ApplyResult], label: str
) -> ForkkitError:
    """One line naming the file and hunk of a plain diff that does not
    apply (the ``-p`` that got furthest: a hunk, not a missing file)."""
    result = next((r for r in tried if r.kind == "hunk"), tried[0])
    if result.kind == "hunk":
        where = raw_hunk(text, result.path, result.line)
        return ForkkitError(
            f"{src}: {where} does not apply to {label}; nothing written"
        )
    detail = f"{result.path}: {result.kind}" if result.path else result.message
    return ForkkitError(f"{src}: does not apply to {label} ({detail}); nothing written")


def _staged(cfg: ForkConfig, mails: list[tuple[str, str]], folder: Path) -> list[Patch]:
    """The new patches, written into ``folder`` and parsed; one line for a
    name ``patches/`` already has."""
    patches = []
    for name, text in mails:
        if (cfg.patches_dir / name).exists():
            raise ForkkitError(
                f"{cfg.patches_dir / name}: exists already; rename the patch file "
                "you add, or remove that one"
            )
        path = folder / name
        path.write_text(text)
        patches.append(replace(parse_patch_text(text, path), path=path))
    return patches


def _applies(repo: Repo, head: str, *, patches: Sequence[Patch], label: str) -> str:
    """The tree the new patches give on ``head``; one line naming the patch
    and hunk that does not apply."""
    with repo.scratch_index("fix-add") as index:
        index.read_tree(head)
        for patch in patches:
            result = index.apply(patch.path)
            if not result.ok:
                raise apply_failure(patch, result, label)
        return index.write_tree()


def _checked_toml(cfg: ForkConfig, text: str) -> str:
    """``text`` when it is TOML declaring every old fix and the new one last."""
    try:
        ids = [d.get("id") for d in tomllib.loads(text).get("fix", [])]
    except (tomllib.TOMLDecodeError, AttributeError):
        ids = []
    want = [d.id for d in cfg.fixes]
    if ids[:-1] != want:
        raise ForkkitError(
            f"{cfg.path}: cannot add a [[fix]] table to its layout (inline 'fix' "
            "tables?); write each [[fix]] as its own table and rerun"
        )
    return text


def _check_tested(fix: Fix) -> None:
    """One line for a fix with no test that does not say so: red-green could
    never prove it. A declared one (``--untested REASON``) is carried as is."""
    if fix.untested or fix.test_files:
        return
    raise ForkkitError(
        f"fix '{fix.id}' ({', '.join(fix.patches)}): its patches add or change no "
        "test module; add the test that shows the fix, or carry it without one: "
        "--untested 'WHY' (a backport, a build change, ...)"
    )


def _next_number(series: Series) -> int:
    """One after the highest ``NNNN-`` prefix of the series (or its length)."""
    found = [int(p.name[:4]) for p in series.patches if p.name[:4].isdigit()]
    return max([len(series.patches), *found]) + 1


def add_fix(
    cfg: ForkConfig,
    *,
    new: NewFix,
    files: Sequence[Path],
    related: Sequence[str] | None,
    how: Import = AS_IS,
) -> Added:
    """Add the fix ``new`` made of ``files``; ``related``: the related suites
    (None: suggested from the imports)."""
    if any(d.id == new.id for d in cfg.fixes):
        raise ForkkitError(
            f"{cfg.path.name}: a [[fix]] '{new.id}' exists already; pick another "
            "id, or export new commits of that fix from the fork tree"
        )
    series = load_series(cfg.series_file, cfg.patches_dir)
    tree = materialize(cfg)
    head = tree.repo.rev("HEAD") or tree.head
    plain = _plain(tree.repo, head, how=how, label=tree.upstream_label)
    mails = _mails(files, new.id, first=_next_number(series), plain=plain)
    with cfg.work.scratch_folder("fix-add") as tmp:  # a killed one's: pruned
        patches = _staged(cfg, mails, tmp)
        _applies(tree.repo, head, patches=patches, label=tree.upstream_label)
        decl = FixDecl(
            id=new.id,
            title=new.title,
            forwarded=new.forwarded,
            origin=new.origin,
            untested=new.untested,
            upstream_pr=new.upstream_pr,
            advisory=new.advisory,
        )
        fix = assign(
            [*cfg.fixes, decl], [*series.patches, *patches], config=cfg.path.name
        )[-1]
    _check_tested(fix)
    suggestion = None
    if related is not None:
        check_given(cfg, tree.repo, related, head=head, base=tree.base)
        suites = tuple(related)
    elif fix.untested:  # never proven: no suite runs for it
        suites = ()
    else:
        suggestion = suggest(cfg, tree.repo, fix, head=head, base=tree.base)
        suites = suggestion.kept
    fix = replace(fix, related_suites=suites)
    txn = FileTransaction(cfg.root)
    for name, text in mails:
        txn.write(cfg.patches_dir / name, text)
    old = read_series_text(cfg.series_file)
    names = [*(p.name for p in series.patches), *(n for n, _ in mails)]
    txn.write(cfg.series_file, rewrite_series_text(old, names))
    table = fix_table(replace(new, related_suites=suites))
    txn.write(cfg.path, _checked_toml(cfg, with_table(cfg.path.read_text(), table)))
    txn.commit()
    return Added(fix=fix, suggestion=suggestion)


@dataclass(frozen=True, kw_only=True)
class Related:
    """``fix related ID --add SUITE... --drop SUITE...``."""

    fix_id: str
    add: tuple[str, ...] = ()
    drop: tuple[str, ...] = ()


def change_related(cfg: ForkConfig, change: Related) -> tuple[str, ...]:
    """The fix's related suites after ``change`` (written to fork.toml in one
    transaction, the added ones checked first); as they are without one."""
    decl = next((d for d in cfg.fixes if d.id == change.fix_id), None)
    if decl is None:
        ids = ", ".join(d.id for d in cfg.fixes) or "none"
        raise ForkkitError(
            f"{cfg.path.name}: no [[fix]] '{change.fix_id}' (fixes: {ids})"
        )
    now = list(decl.related_suites)
    for suite in change.drop:
        if suite not in now:
            raise ForkkitError(
                f"--drop {suite}: not one of fix '{decl.id}''s related suites "
                f"({', '.join(now) or 'none'})"
            )
    added = [s for s in dict.fromkeys(change.add) if s not in now]
    suites = [s for s in now if s not in change.drop] + added
    if suites == now:  # nothing to change: fork.toml stays as it is
        return tuple(now)
    if added:
        tree = materialize(cfg)
        head = tree.repo.rev("HEAD") or tree.head
        check_given(cfg, tree.repo, added, head=head, base=tree.base)
    text = with_related(cfg.path.read_text(), decl.id, suites)
    try:
        tables = tomllib.loads(text).get("fix", [])
    except tomllib.TOMLDecodeError:
        tables = []
    got = next(
        (d.get("related_suites", []) for d in tables if d.get("id") == decl.id),
        None,
    )
    if got != suites:
        raise ForkkitError(
            f"{cfg.path}: cannot rewrite fix '{decl.id}''s related_suites in its "
            "layout; edit it by hand"
        )
    txn = FileTransaction(cfg.root)
    txn.write(cfg.path, text)
    txn.commit()
    return tuple(suites)
