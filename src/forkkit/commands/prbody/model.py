# SPDX-License-Identifier: Apache-2.0
"""What a PR description is made of, and how it is kept portable (pure: no I/O).

Every report is read as its producer's types, after its schema and version
are checked: red/green (required, :class:`~forkkit.services.proof.doc.ProofDoc`),
repro, reconcile and rebase (optional: ``ReproDoc``, ``ReconcileDoc``,
``RebaseDoc`` beside their producers).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from forkkit.output.mdtext import md_text
from forkkit.output.verdicts import ExitTable
from forkkit.patches.retired import Retired
from forkkit.patches.testids import target_file
from forkkit.services.proof.doc import ProofDoc
from forkkit.services.rebase.doc import RebaseDoc
from forkkit.services.reconcile.doc import ReconcileDoc
from forkkit.services.repro.doc import ReproDoc
from forkkit.upstream.release import sdist_version

Verdict = Literal["written"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={"written": (0, "the PR description, on stdout or in --output FILE")},
    errors="no red/green report, or one made on another pin, series or fix, ...",
)

FOLD_AFTER = 12  # longer test lists go in a <details> block
SHOWN_TESTS = 3  # tests named per hunk in the hunk matrix
# pytest options that only name forkkit's own report files
_REPORT_OPTIONS = ("--junitxml", "junit_family")
# an absolute path that starts a word (not a URL, not red/green, not </tag>)
_ABSOLUTE = re.compile(r"(?<![\w.~:/<>-])/(?=[\w.~])[^\s`'\"()\[\]<>|,;]*")


@dataclass(frozen=True)
class PrInputs:
    """The reports (JSON documents) and fork.toml's title."""

    title: str
    red_green: ProofDoc
    purpose: str = ""  # the fix's first patch's message (its description)
    repro: ReproDoc | None = None
    reconcile: ReconcileDoc | None = None
    rebase: RebaseDoc | None = None  # the latest rebase report
    retired: Sequence[Retired] = ()  # patches/retired.toml
    # local path -> portable name, e.g. the workdir -> ``WORKDIR``
    roots: Mapping[str, str] = field(default_factory=dict)
    # the fix's own related suites ([[fix]] related_suites): the related run
    # the report holds ran every fix's, which a one-fix branch may not have
    own_suites: tuple[str, ...] = ()


def sdist_sha256(ident: str) -> str | None:
    """The sha256 in ``sdist:NAME==VERSION#sha256=HEX``."""
    _, sep, sha = ident.partition("#sha256=")
    return sha if sep and ident.startswith("sdist:") else None


def upstream_rev(doc: ProofDoc) -> str:
    """The upstream revision a reviewer checks the runtime files out at.

    The upstream commit when the report knows it, the release tag
    (``vX.Y.Z``) of an sdist pin, else the git source's revision.
    """
    if doc.upstream.pin is not None:  # typed: nothing parsed back
        return doc.upstream.commit or doc.upstream.pin.checkout_rev or "BASE"
    if doc.upstream.commit:  # a report made before the typed pin
        return doc.upstream.commit
    ident = doc.upstream.ident
    version = sdist_version(ident)
    if version:
        return "v" + version
    return ident.rpartition("@")[2] or "BASE"


def pytest_command(command: str) -> str:
    """A report's pytest command without the options for forkkit's own files
    (a command that does not split, an unbalanced quote say, as it is)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    out: list[str] = []
    for word in words:
        if out and out[-1] == "-o" and word.startswith(_REPORT_OPTIONS):
            out.pop()
        elif not word.startswith(_REPORT_OPTIONS):
            out.append(word)
    return shlex.join(out)


def retarget(command: str, *, ran: Sequence[str], targets: Sequence[str]) -> str:
    """:func:`pytest_command` of a run with ``targets`` in place of the
    targets it ``ran`` (the last words of its command line); as it is when
    they are not its last words."""
    shown = pytest_command(command)
    try:
        words = shlex.split(shown)
    except ValueError:
        return shown
    if not ran or words[-len(ran) :] != list(ran):
        return shown
    return shlex.join([*words[: -len(ran)], *targets])


def env_prefix(doc: ProofDoc) -> str:
    """``K=V ... PYTHONPATH=$PWD``: what each pytest run sets."""
    pairs = sorted(doc.env.items())
    return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in pairs), "PYTHONPATH=$PWD"])


def portable(text: str, roots: Mapping[str, str]) -> str:
    """``text`` with local absolute paths replaced: each of ``roots`` by its
    name (longest first), any other by ``…/`` and its last part."""
    for root in sorted(roots, key=len, reverse=True):
        folder = root.rstrip("/")
        if folder.startswith("/"):  # "/" itself (HOME=/ or empty) names nothing
            text = text.replace(folder, roots[root])
    return _ABSOLUTE.sub(
        lambda m: "…/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text
    )


def counts_cells(counts: Mapping[str, int] | None) -> list[object]:
    """Passed, failed, errors (collection errors included), skipped."""
    if not counts:
        return ["-", "-", "-", "-"]
    errors = int(counts.get("error", 0)) + int(counts.get("collection_errors", 0))
    return [
        counts.get("passed", 0),
        counts.get("failed", 0),
        errors,
        counts.get("skipped", 0),
    ]


def count_text(counts: Mapping[str, int] | None) -> str:
    """``407 passed, 0 failed, 0 errors, 2 skipped``."""
    passed, failed, errors, skipped = counts_cells(counts)
    return f"{passed} passed, {failed} failed, {errors} errors, {skipped} skipped"


def zero_or(value: Any, *, sign: bool = False) -> str:
    """An integer with thousands separators (``+`` with ``sign``); ``—`` if none."""
    if not isinstance(value, int):
        return "—"
    return f"{value:+,}" if sign else f"{value:,}"


def shown(tests: Sequence[str], most: int = SHOWN_TESTS) -> str:
    """The first few tests, in code spans, and how many more."""
    out = ", ".join(f"`{t}`" for t in tests[:most])
    more = len(tests) - most
    return out + (f" (+{more} more)" if more > 0 else "")


@dataclass(frozen=True)
class HunkRow:
    """One runtime hunk of the fix and the FAIL_TO_PASS tests it turns red."""

    hunk: str
    path: str
    symbol: str
    reverted: bool
    turns_red: tuple[str, ...]
    untested: bool


def hunk_rows(doc: ProofDoc) -> list[HunkRow]:
    """The hunk matrix, grouped by file and enclosing function (none: absent)."""
    rows = [
        HunkRow(
            hunk=h.hunk,
            path=h.path,
            symbol=h.symbol or "(module level)",
            reverted=h.reverted,
            turns_red=h.turns_red,
            untested=h.untested,
        )
        for h in doc.hunks or ()
    ]
    return sorted(rows, key=lambda r: (r.path, r.symbol))


def changed_tests(rg: ProofDoc) -> list[str]:
    """```path` (new)`` or ``(changed)`` for each test file of the fix's own
    tests that the series changes (another fix's are not this PR's)."""
    own = {target_file(t) for t in rg.tests}
    return [
        f"`{f.path}` ({'new' if not f.base_blob else 'changed'})"
        for f in rg.files_of("test")
        if f.base_blob != f.fix_blob and (not own or f.path in own)
    ]


def purpose_head(title: str, *, prompt: str) -> list[str]:
    """``## Purpose``, the title in bold, and the author's prompt (a comment)."""
    out = ["## Purpose", ""]
    if title:
        out += [f"**{md_text(title)}**", ""]
    return [*out, f"<!-- {prompt} -->", ""]


AI_DISCLOSURE = (
    "## AI assistance\n\n"
    "<!-- Disclose AI assistance here, as vLLM's contributing guide asks: which "
    "tools were used and for what (or write that none was). -->\n"
    "AI assistance: <!-- describe -->\n"
)
