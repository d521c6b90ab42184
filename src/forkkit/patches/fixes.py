# SPDX-License-Identifier: Apache-2.0
"""Fixes as units, derived from the series (pure).

Each patch of the series belongs to exactly one fix: its message carries the
trailer ``Forkkit-Fix: ID``, and ``fork.toml`` has a ``[[fix]]`` table with
that ``id`` (its title, the upstream PR it was forwarded as, its origin, and
any related suites). What a fix touches is never written by hand: its runtime
files are the non-test files its patches change, its focused tests the test
modules they add or change (down to the test functions a change lies in, see
:func:`targets_changed`). So the config cannot leave out a file or a test a
patch changes, and nothing goes stale when a patch is retired.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from forkkit.errors import ForkkitError
from forkkit.patches.diff import DiffHunk
from forkkit.patches.paths import is_runtime_path, is_test_module, is_test_path
from forkkit.patches.series import Patch
from forkkit.patches.symbols import enclosing, python_symbols
from forkkit.patches.testids import qualname_node

FIX_TRAILER = "Forkkit-Fix"
# a ``[[fix]]`` table's header line in fork.toml, however it is spaced
FIX_TABLE = re.compile(r"^\s*\[\[\s*fix\s*\]\]\s*(#.*)?$")
FIX_ID = re.compile(r"[a-z0-9][a-z0-9._-]*")
FIX_ID_MAX = 64  # it names folders and branches


@dataclass(frozen=True, kw_only=True)
class FixDecl:
    """A ``[[fix]]`` table of ``fork.toml``: what the patches cannot say."""

    id: str
    title: str = ""  # default: the subject of the fix's first patch
    forwarded: str = ""  # the upstream PR it was proposed as (DEP-3 Forwarded)
    origin: str = ""  # where it comes from (an issue, a commit, a report)
    related_suites: tuple[str, ...] = ()  # suites that guard around it
    # proof = "none": carried without a test, and why (DEP-3 allows it)
    untested: str = ""
    upstream_pr: str = ""  # the upstream PR it backports (a vendor's provenance)
    advisory: str = ""  # the security advisory it fixes, e.g. GHSA-xxxx-xxxx-xxxx
    raises: str = ""  # the bug is this exception (a red failure that shows it)


@dataclass(frozen=True, kw_only=True)
class Fix:
    """One fix: its declaration and what its patches change."""

    id: str
    title: str
    forwarded: str
    origin: str
    related_suites: tuple[str, ...]
    patches: tuple[str, ...]  # patch file names, in series order
    runtime_files: tuple[str, ...]  # non-test files its patches change
    test_files: tuple[str, ...]  # test modules its patches add or change
    runtime_patches: tuple[str, ...] = ()  # its patches that change runtime files
    patch_sha256: tuple[str, ...] = ()  # of each patch's text, in order
    untested: str = ""  # declared without a test: the reason (never proven)
    upstream_pr: str = ""  # the upstream PR it backports
    advisory: str = ""  # the security advisory it fixes
    raises: str = ""  # the bug is this exception: its red failure shows the bug

    @property
    def provenance(self) -> str:
        """Its advisory and the upstream PR it backports, for a report."""
        parts = [
            self.advisory,
            f"backports {self.upstream_pr}" if self.upstream_pr else "",
        ]
        return "; ".join(p for p in parts if p)

    @property
    def tests_only(self) -> bool:
        """Its runtime change is upstream's now: only its tests are carried."""
        return not self.runtime_files


_TRAILER_LINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*\s*:\s")


def fix_trailer(message: str) -> str | None:
    """The value of the last ``Forkkit-Fix:`` trailer of a message body (no
    subject): read only from its trailer block (the last paragraph, every
    line ``Key: value`` or a continuation), as git reads trailers; a
    ``Forkkit-Fix:`` line in the middle of the body is prose."""
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip()) if p.strip()]
    if not paragraphs:
        return None
    block = paragraphs[-1].splitlines()
    if not all(_TRAILER_LINE.match(ln) or ln[:1].isspace() for ln in block):
        return None
    found = None
    for line in block:
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == FIX_TRAILER.lower():  # as git reads keys
            found = value.strip()
    return found


# names a fix cannot have: the whole series as one unit, the summary's files
RESERVED = frozenset({"series", "summary", "summary.md", "summary.json"})


def check_fix_id(value: str, where: str) -> str:
    """A fix id: lowercase letters, digits and ``. _ -`` (it names a folder)."""
    if not FIX_ID.fullmatch(value) or len(value) > FIX_ID_MAX:
        raise ForkkitError(
            f"{where}: fix id {value[:FIX_ID_MAX]!r}"
            f"{'...' if len(value) > FIX_ID_MAX else ''} must be lowercase "
            f"letters, digits and . _ -, at most {FIX_ID_MAX} characters (it "
            "names the fix's report folder); rename it"
        )
    if value in RESERVED:
        raise ForkkitError(
            f"{where}: fix id {value!r} is reserved (the whole series, the "
            "summary's files); rename it"
        )
    return value


def assign(
    decls: Sequence[FixDecl],
    patches: Sequence[Patch],
    *,
    config: str,
    pending: Collection[str] = (),
) -> tuple[Fix, ...]:
    """The fixes of the series, in ``[[fix]]`` order; one line for a patch
    that belongs to no fix, an unknown fix id, or a fix without patches. A
    fix in ``pending`` (ids with patches out of the series until a conflict
    is resolved: ``patches/pending.toml``) may have none: it is left out."""
    known = {d.id: d for d in decls}
    mine: dict[str, list[Patch]] = {d.id: [] for d in decls}
    for patch in patches:
        fid = fix_trailer(patch.message)
        if fid is None:
            ids = ", ".join(known) or "none declared yet"
            raise ForkkitError(
                f"{patch.name}: belongs to no fix; add the trailer "
                f"'{FIX_TRAILER}: ID' to its message (fixes of {config}: {ids}), "
                "or bring it in with 'forkkit fix add'"
            )
        if fid not in known:
            raise ForkkitError(
                f"{patch.name}: '{FIX_TRAILER}: {fid}' names no [[fix]] of "
                f'{config}; add a [[fix]] table with id = "{fid}" or fix the '
                "trailer"
            )
        mine[fid].append(patch)
    for decl in decls:
        if not mine[decl.id] and decl.id not in pending:
            raise ForkkitError(
                f"{config} [[fix]] '{decl.id}': no patch of the series carries "
                f"'{FIX_TRAILER}: {decl.id}'; remove the table or add the trailer"
            )
    return tuple(_fix(d, mine[d.id]) for d in decls if mine[d.id])


def _fix(decl: FixDecl, patches: Sequence[Patch]) -> Fix:
    files = [f for p in patches for f in p.files]
    runtime = [f for f in files if is_runtime_path(f)]
    runtime += [f for p in patches for f in p.old_paths if is_runtime_path(f)]
    tests = [f for f in files if is_test_path(f) and is_test_module(f)]
    return Fix(
        id=decl.id,
        title=decl.title or patches[0].subject,
        forwarded=decl.forwarded,
        origin=decl.origin,
        related_suites=decl.related_suites,
        untested=decl.untested,
        upstream_pr=decl.upstream_pr,
        advisory=decl.advisory,
        raises=decl.raises,
        patches=tuple(p.name for p in patches),
        runtime_files=tuple(dict.fromkeys(runtime)),
        test_files=tuple(dict.fromkeys(tests)),
        runtime_patches=tuple(
            p.name for p in patches if any(is_runtime_path(f) for f in p.files)
        ),
        patch_sha256=tuple(p.sha256 for p in patches),
    )


def targets_changed(path: str, *, hunks: Sequence[DiffHunk], source: str) -> set[str]:
    """The pytest targets a patch's ``hunks`` in test module ``path`` change,
    read in ``source`` (the file as that patch leaves it): the test functions
    every changed line lies in, or the whole file when a change is outside
    every test (a helper, a fixture) or the file does not parse. A
    module-level import added beside changed tests is theirs (they use it);
    an import changed alone stands for the whole file."""
    symbols = python_symbols(source)
    if not symbols and source.strip():
        return {path}
    text = source.splitlines()
    imports = import_lines(source)
    out: set[str] = set()
    only_imports = False  # an import changed, and no test
    for hunk in hunks:
        if hunk.removed > len(hunk.added_lines):
            return {path}  # lines deleted: which test had them is not certain
        for line in hunk.added_lines:
            code = text[line - 1].strip() if 0 < line <= len(text) else ""
            if not code or code.startswith("#"):
                continue  # a blank line or a comment between tests
            sym = enclosing(symbols, line)
            node = qualname_node(path, sym.qualname) if sym else None
            if node is None and line in imports and not sym:
                only_imports = True  # one the changed tests use: no test of its own
                continue
            if node is None:
                return {path}
            out.add(node)
    return out or ({path} if only_imports else set())


def classes_changed(hunks: Sequence[DiffHunk], *, source: str) -> set[str]:
    """The names of the classes the added lines of ``hunks`` lie in, read in
    ``source`` (the file as the change leaves it)."""
    symbols = python_symbols(source)
    classes = {s.qualname for s in symbols if s.kind == "class"}
    out: set[str] = set()
    for hunk in hunks:
        for line in hunk.added_lines:
            sym = enclosing(symbols, line)
            parts = sym.qualname.split(".") if sym else []
            out |= {
                parts[i - 1]
                for i in range(1, len(parts) + 1)
                if ".".join(parts[:i]) in classes
            }
    return out


def import_lines(source: str) -> set[int]:
    """The lines of ``source``'s module-level import statements (empty when
    it does not parse)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return set()
    return {
        n
        for node in tree.body
        if isinstance(node, ast.Import | ast.ImportFrom)
        for n in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }


def nodes_defined(path: str, source: str) -> set[str]:
    """The node ids of the tests defined in ``source`` (test module ``path``)."""
    return {
        node
        for sym in python_symbols(source)
        if (node := qualname_node(path, sym.qualname)) is not None
    }


def narrowed(targets: set[str], *, present: set[str], path: str) -> tuple[str, ...]:
    """``targets``, each still a test of ``path`` (``present``: the node ids
    of its tests now); the whole file when one is gone (renamed by a later
    patch, say): a changed test is never dropped."""
    if path in targets or not targets <= present:
        return (path,)
    return tuple(sorted(targets))
