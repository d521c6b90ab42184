# SPDX-License-Identifier: Apache-2.0
"""Every report's JSON carries its ``schema`` and ``version``; a reader takes
only its own document at the version it knows (output/report.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit.errors import ForkkitError
from forkkit.output.report import (
    DOC_TYPES,
    GPU_CHECK,
    PROOF,
    REBASE,
    read_report_json,
    write_reports,
)


def test_doc_types_are_distinct() -> None:
    assert len({d.schema for d in DOC_TYPES}) == len(DOC_TYPES)
    assert all(d.schema.startswith("forkkit.") and d.version >= 1 for d in DOC_TYPES)


def test_written_reports_carry_schema_and_version(tmp_path: Path) -> None:
    _, js = write_reports(tmp_path, "r", markdown="# r\n", data={"a": 1}, doc=REBASE)
    doc = json.loads(js.read_text())
    assert (doc["schema"], doc["version"], doc["a"]) == ("forkkit.rebase", 1, 1)
    assert read_report_json(js, doc=REBASE, hint="h") == doc


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ({"valid": True}, "not a red/green report (no schema, expected"),
        (REBASE.stamp({}), "not a red/green report (schema 'forkkit.rebase'"),
        (
            {**PROOF.stamp({}), "version": 2},
            "version 2; this forkkit reads version 1",
        ),
    ],
)
def test_a_reader_refuses_another_document_in_one_line(
    tmp_path: Path, data: dict[str, object], why: str
) -> None:
    path = tmp_path / "x.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ForkkitError) as e:
        read_report_json(path, doc=PROOF, hint="run forkkit red-green first")
    line = str(e.value)
    assert "\n" not in line and why in line and line.endswith("red-green first")


def test_a_body_cannot_override_what_the_document_is() -> None:
    """stamp() wins over a body's own schema or version (the GPU check once
    wrote "schema": 1 into its body, and it was kept)."""
    doc = GPU_CHECK.stamp({"schema": 1, "version": 9, "python": "3.11"})
    assert (doc["schema"], doc["version"]) == (GPU_CHECK.schema, GPU_CHECK.version)
    assert GPU_CHECK.refusal(doc) is None and doc["python"] == "3.11"
