"""Shared report plumbing: Markdown tables and writing the Markdown/JSON pair."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from forkkit.errors import ForkkitError


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
    out_dir: Path, stem: str, markdown: str, data: dict[str, Any]
) -> tuple[Path, Path]:
    """Write ``STEM.md`` and ``STEM.json`` under ``out_dir``; return both paths."""
    md = out_dir / f"{stem}.md"
    js = out_dir / f"{stem}.json"
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        md.write_text(markdown)
        js.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    except OSError as exc:
        raise ForkkitError(
            f"{exc.filename or out_dir}: cannot write the report ({exc.strerror}); "
            "pick a writable report folder"
        ) from None
    return md, js
