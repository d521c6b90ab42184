# SPDX-License-Identifier: Apache-2.0
"""``forkkit fix add``: the pure parts. A patch file's mails, the trailer
that makes a patch a fix's, the ``[[fix]]`` table, and which test files
import a changed module (no I/O)."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from forkkit.errors import ForkkitError
from forkkit.output.verdicts import ExitTable
from forkkit.patches.fixes import FIX_TABLE, FIX_TRAILER, fix_trailer

Verdict = Literal["added"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={"added": (0, "the fix's patches, patches/series and fork.toml are written")}
)

# an mbox's "From <sha> <date>" separator line, as git format-patch writes it
_FROM = re.compile(r"^From [0-9a-f]{40}(?:[0-9a-f]{24})? ", re.M)
_TRAILER_LINE = re.compile(r"^[A-Za-z0-9-]+: \S")
_NUMBER = re.compile(r"^\d{4}-")


@dataclass(frozen=True, kw_only=True)
class NewFix:
    """What ``fix add`` writes: the fix's table and its patches."""

    id: str
    title: str = ""
    forwarded: str = ""
    origin: str = ""
    related_suites: tuple[str, ...] = ()
    untested: str = ""  # --untested REASON: proof = "none"
    upstream_pr: str = ""
    advisory: str = ""


def split_mails(text: str, *, where: str) -> list[str]:
    """The mails of a patch file: one, or several in mbox form."""
    starts = [m.start() for m in _FROM.finditer(text)]
    if len(starts) <= 1:
        return [text]
    if text[: starts[0]].strip():
        raise ForkkitError(f"{where}: text before the first mail; pass an mbox")
    ends = [*starts[1:], len(text)]
    return [text[a:b] for a, b in zip(starts, ends, strict=True)]


def with_fix_trailer(mail: str, fix_id: str, *, where: str) -> str:
    """``mail`` with ``Forkkit-Fix: fix_id`` as the last trailer of its
    message (kept when it is there; one line when it names another fix)."""
    head, sep, rest = mail.partition("\n---\n")
    if not sep:
        raise ForkkitError(
            f"{where}: no '---' line after the message; pass git format-patch output"
        )
    found = fix_trailer(head.split("\n\n", 1)[-1])
    if found == fix_id:
        return mail
    if found is not None:
        raise ForkkitError(
            f"{where}: its message says '{FIX_TRAILER}: {found}', not {fix_id!r}; "
            "add it to that fix, or edit the trailer"
        )
    lines = head.rstrip("\n").split("\n")
    block = _TRAILER_LINE.match(lines[-1]) is not None and "" in lines
    lines += [f"{FIX_TRAILER}: {fix_id}"] if block else ["", f"{FIX_TRAILER}: {fix_id}"]
    return "\n".join(lines) + sep + rest


def numbered(name: str, position: int) -> str:
    """A patch file name at ``position`` (from 1) of the series: ``NNNN-rest``."""
    rest = _NUMBER.sub("", PurePosixPath(name).name)
    return f"{position:04d}-{rest if rest.endswith('.patch') else rest + '.patch'}"


def _quote(value: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(value)


def fix_table(fix: NewFix) -> str:
    """The ``[[fix]]`` table's TOML text."""
    out = ["", "[[fix]]", f"id = {_quote(fix.id)}"]
    for key in ("title", "forwarded", "origin", "upstream_pr", "advisory"):
        if value := getattr(fix, key):
            out.append(f"{key} = {_quote(value)}")
    if fix.untested:
        out += ['proof = "none"', f"reason = {_quote(fix.untested)}"]
    if fix.related_suites:
        out.append("related_suites = [")
        out += [f"    {_quote(s)}," for s in fix.related_suites]
        out.append("]")
    return "\n".join(out) + "\n"


def _parses(text: str) -> dict[str, object] | None:
    """``text`` as TOML, or None when it is not TOML (yet)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def with_related(toml: str, fix_id: str, suites: Sequence[str]) -> str:
    """``fork.toml`` text with the ``related_suites`` of ``[[fix]]`` ``fix_id``
    set to ``suites`` (its old key, one line or many, replaced at its
    place, else added at the table's end); every other byte kept."""
    lines = toml.splitlines(keepends=True)
    heads = [i for i, ln in enumerate(lines) if re.match(r"^\s*\[", ln)]

    def end_of(i: int) -> int:
        return min([h for h in heads if h > i] or [len(lines)])

    def is_mine(i: int) -> bool:
        body = _parses("".join(lines[i + 1 : end_of(i)]))
        return body is not None and body.get("id") == fix_id

    mine = next((i for i in heads if FIX_TABLE.match(lines[i]) and is_mine(i)), None)
    if mine is None:
        raise ForkkitError(f"fork.toml: no [[fix]] with id = {_quote(fix_id)}")
    end = end_of(mine)
    key = [i for i in range(mine, end) if re.match(r"^\s*related_suites\s*=", lines[i])]
    new = "related_suites = [" + ", ".join(_quote(s) for s in suites) + "]\n"
    if key:  # the key's value ends where its lines first parse as TOML
        stop = next(
            (j for j in range(key[0], end) if _parses("".join(lines[key[0] : j + 1]))),
            None,
        )
        if stop is None:
            raise ForkkitError(
                f"fork.toml: [[fix]] {fix_id!r}: unreadable related_suites"
            )
        return "".join([*lines[: key[0]], new, *lines[stop + 1 :]])
    at = end
    while at > mine + 1 and not lines[at - 1].strip():
        at -= 1
    if at > 0 and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    return "".join([*lines[:at], new, *lines[at:]])


def with_table(toml: str, table: str) -> str:
    """``fork.toml`` text with ``table`` after its last ``[[fix]]`` table (or
    before ``[testenv]``, or at the end); every other byte kept."""
    lines = toml.splitlines(keepends=True)
    heads = [i for i, ln in enumerate(lines) if re.match(r"^\s*\[", ln)]
    fixes = [i for i in heads if FIX_TABLE.match(lines[i])]
    if fixes:
        after = [i for i in heads if i > fixes[-1]]
        at = after[0] if after else len(lines)
    else:
        env = [i for i in heads if lines[i].strip() == "[testenv]"]
        at = env[0] if env else len(lines)
    while at > 0 and lines[at - 1].lstrip().startswith("#"):
        at -= 1  # the comment lines above the next table stay with it
    body = table.lstrip("\n").rstrip("\n") + "\n\n"
    before = "".join(lines[:at])
    if before and not before.endswith("\n\n"):
        body = ("\n" if before.endswith("\n") else "\n\n") + body
    return before + body + "".join(lines[at:])


def import_patterns(runtime_files: Sequence[str]) -> list[str]:
    """``git grep -E`` patterns of an import of each runtime module
    (``vllm/v1/core/x.py``: ``import vllm.v1.core.x``, ``from vllm.v1.core.x
    import``, ``from vllm.v1.core import x``)."""
    out = []
    for path in runtime_files:
        p = PurePosixPath(path)
        if p.suffix != ".py":
            continue
        parts = [*p.parent.parts, *([] if p.stem == "__init__" else [p.stem])]
        if not parts:
            continue
        module = re.escape(".".join(parts))
        out.append(rf"^\s*(import|from)\s+{module}(\s|$|\.|,)")
        if len(parts) > 1:
            pkg, leaf = re.escape(".".join(parts[:-1])), re.escape(parts[-1])
            out.append(rf"^\s*from\s+{pkg}\s+import\s+(.*[ ,(])?{leaf}([ ,)]|$)")
    return out


# a test module that starts an API server, or loads a model (or its
# tokenizer) from the Hugging Face Hub: ``git grep -E`` patterns
SERVER_PATTERNS = (r"Remote[A-Za-z]*Server", r"uvicorn", r"run_server\(", r"api_server")
HUB_PATTERNS = (
    *(r"vllm_runner", r"hf_runner", r"LLM\(", r"from_pretrained\("),
    *(r"snapshot_download", r"hf_hub_download"),
    r"(MODEL|model)[A-Za-z_]*[[:space:]]*=[[:space:]]*[[(]?[[:space:]]*['\"]"
    r"[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+['\"]",
)


def closeness(test: str, runtime_files: Sequence[str]) -> int:
    """How near a test module is to the changed code: the folders its path
    shares with a changed module's package (``tests/entrypoints/openai/x.py``
    and ``vllm/entrypoints/openai/protocol.py``: 2)."""
    mine = PurePosixPath(test).parent.parts[1:]  # below tests/
    best = 0
    for path in runtime_files:
        pkg = PurePosixPath(path).parent.parts[1:]  # below the top package
        same = 0
        for a, b in zip(mine, pkg, strict=False):
            if a != b:
                break
            same += 1
        best = max(best, same)
    return best


def ranked(
    candidates: Sequence[str], *, runtime_files: Sequence[str], sizes: dict[str, int]
) -> list[str]:
    """``candidates`` nearest first (:func:`closeness`), then smallest."""
    return sorted(
        candidates,
        key=lambda t: (-closeness(t, runtime_files), sizes.get(t, 0), t),
    )
