"""Shared report plumbing: Markdown tables, the Markdown/JSON pair, and the
GitHub Actions job summary."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

from forkkit.errors import ForkkitError
from forkkit.output.doc import from_json, to_json
from forkkit.output.progress import say

T = TypeVar("T")
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"
# GitHub refuses a step's summary over 1 MiB (and then shows none of it).
STEP_SUMMARY_LIMIT = 1024 * 1024


@dataclass(frozen=True)
class DocType:
    """What a report's JSON document is: its ``schema`` name and ``version``.

    Every report carries both at its top; a reader takes only its own schema
    at the version it knows (a change a reader must know bumps the version),
    and the ``older`` versions its class upgrades (:meth:`Report.upgrade`).
    """

    schema: str
    version: int
    what: str  # how a message names it, e.g. "red/green report"
    older: tuple[int, ...] = ()  # versions its Report class upgrades on read

    def stamp(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` with its ``schema`` and ``version`` (first, and never the
        body's: a body cannot override what it is)."""
        body = {k: v for k, v in data.items() if k not in ("schema", "version")}
        return {"schema": self.schema, "version": self.version, **body}

    def refusal(self, doc: dict[str, Any]) -> str | None:
        """Why ``doc`` is not this document at this version (None: it is)."""
        schema, version = doc.get("schema"), doc.get("version")
        if schema != self.schema:
            found = f"schema {schema!r}" if schema else "no schema"
            return f"not a {self.what} ({found}, expected {self.schema!r})"
        if version != self.version and version not in self.older:
            return (
                f"a {self.what} of version {version!r}; this forkkit reads "
                f"version {self.version}"
            )
        return None


# The documents forkkit writes (one per command that publishes a report).
# version 2: the red recipe is a typed field (red_recipe), never read from
# base_label; a version 1 report is upgraded on read (ProofDoc.upgrade)
PROOF = DocType("forkkit.red-green", 2, "red/green report", older=(1,))
SUMMARY = DocType("forkkit.red-green-summary", 1, "red/green summary")
LINES = DocType("forkkit.red-green-lines", 1, "red/green of every line")
REBASE = DocType("forkkit.rebase", 1, "rebase report")
RECONCILE = DocType("forkkit.reconcile", 1, "reconcile report")
REPRO = DocType("forkkit.repro", 1, "repro report")
WATCH = DocType("forkkit.watch", 1, "watch report")
SUITES = DocType("forkkit.suites", 1, "suites report")
GPU_CHECK = DocType("forkkit.gpu-check", 1, "GPU check report")
BISECT = DocType("forkkit.bisect", 1, "bisect report")
DOC_TYPES = (
    *(PROOF, SUMMARY, LINES, REBASE, RECONCILE, REPRO, WATCH, SUITES, GPU_CHECK),
    BISECT,
)


class Report:
    """A report's document: a frozen dataclass that both writes its JSON
    (:meth:`document`, stamped as :attr:`DOC`) and reads it back
    (:meth:`read`, which refuses another schema or version). Every
    :data:`DOC_TYPES` entry is the ``DOC`` of exactly one such class
    (``tests/unit/test_layers.py``)."""

    DOC: ClassVar[DocType]

    def document(self) -> dict[str, Any]:
        """The JSON document: the fields, stamped (a field cannot override
        the stamp)."""
        return self.DOC.stamp(to_json(self))

    @classmethod
    def upgrade(cls, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` of one of ``DOC.older``'s versions as the current
        version's (the class of a report with older versions overrides it)."""
        return data

    @classmethod
    def read(cls, path: Path, *, hint: str) -> Self:
        """The report at ``path``; one line naming the file, the field and
        ``hint`` otherwise."""
        return read_typed(path, cls, doc=cls.DOC, hint=hint, upgrade=cls.upgrade)

    @classmethod
    def of(cls, data: dict[str, Any], *, where: str) -> Self:
        """The report in the JSON object ``data`` (``where`` names it);
        ValueError says what is wrong."""
        why = cls.DOC.refusal(data)
        if why:
            raise ValueError(f"{where}: {why}")
        return from_json(cls, cls.upgrade(data), where=where)


def md_escape(cell: object) -> str:
    """A table cell: pipes escaped, newlines folded."""
    return str(cell).replace("|", "\\|").replace("\n", " ")


def md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table."""
    out = ["| " + " | ".join(md_escape(h) for h in headers) + " |"]
    out.append("|" + "|".join("---" for _ in headers) + "|")
    out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def write_reports(
    out_dir: Path, stem: str, *, markdown: str, report: Report
) -> tuple[Path, Path]:
    """Write ``STEM.md`` and ``STEM.json`` (``report``'s document) under
    ``out_dir``; return both paths."""
    md = out_dir / f"{stem}.md"
    js = out_dir / f"{stem}.json"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        md.write_text(markdown)
        js.write_text(dump_json(report.document()))
    except OSError as exc:
        raise ForkkitError(
            f"{exc.filename or out_dir}: cannot write the report ({exc.strerror}); "
            "pick a writable report folder"
        ) from None
    return md, js


def append_step_summary(markdown: str) -> Path | None:
    """Append ``markdown`` to the job summary if ``$GITHUB_STEP_SUMMARY`` is set.

    Returns the summary file, or None when unset. Cut to fit GitHub's 1 MiB per
    step (the full report stays in the run's report folder); a summary that
    cannot be written is a warning, never the command's failure.
    """
    target = os.environ.get(STEP_SUMMARY_ENV)
    if not target:
        return None
    path = Path(target)
    text = markdown.rstrip("\n") + "\n\n"
    try:
        room = STEP_SUMMARY_LIMIT - (path.stat().st_size if path.exists() else 0)
        data = text.encode()
        if len(data) > room:
            note = "\n\n_(cut to fit the job summary: see the uploaded report)_\n"
            keep = max(room - len(note.encode()), 0)
            data = data[:keep].decode(errors="ignore").encode() + note.encode()
            data = data if len(data) <= room else b""
        with path.open("ab") as fh:
            fh.write(data)
    except OSError as exc:
        say(f"{path}: cannot append to the job summary ({exc.strerror or exc})")
        return None
    return path


def dump_json(data: dict[str, Any]) -> str:
    """A report's JSON text (keys sorted at every level)."""
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


def read_report_json(path: Path, *, doc: DocType, hint: str) -> dict[str, Any]:
    """A report's JSON object of type ``doc``; one line naming the file and
    ``hint`` otherwise (missing, unreadable, another schema or version)."""
    what = doc.what
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ForkkitError(f"{path}: no such {what}; {hint}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ForkkitError(f"{path}: cannot read the {what} ({exc})") from None
    if not isinstance(data, dict):
        raise ForkkitError(f"{path}: not a {what} (not a JSON object)")
    why = doc.refusal(data)
    if why:
        raise ForkkitError(f"{path}: {why}; {hint}")
    return data


def read_typed(
    path: Path,
    cls: type[T],
    *,
    doc: DocType,
    hint: str,
    upgrade: Callable[[dict[str, Any]], dict[str, Any]] = lambda data: data,
) -> T:
    """A report read as its producer's type ``cls`` (:mod:`forkkit.output.doc`),
    an older version ``upgrade``d first; one line naming the file, the field
    and ``hint`` otherwise."""
    data = read_report_json(path, doc=doc, hint=hint)
    try:
        return from_json(cls, upgrade(data), where=str(path))
    except ValueError as exc:
        raise ForkkitError(f"{exc}; {hint}") from None
