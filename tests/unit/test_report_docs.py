# SPDX-License-Identifier: Apache-2.0
"""Every report's JSON carries its ``schema`` and ``version``; a reader takes
only its own document at the version it knows (output/report.py)."""

from __future__ import annotations

import dataclasses
import importlib
import json
from pathlib import Path

import pytest

from forkkit.errors import ForkkitError
from forkkit.output.doc import readable
from forkkit.output.report import (
    DOC_TYPES,
    GPU_CHECK,
    PROOF,
    REBASE,
    Report,
    read_report_json,
    write_reports,
)
from forkkit.services.rebase.doc import RebaseDoc


def _report_classes() -> list[type[Report]]:
    """Every report class forkkit defines (each module imported)."""
    import forkkit

    src = Path(forkkit.__file__).parent
    for path in sorted(src.rglob("*.py")):
        name = ".".join(("forkkit", *path.relative_to(src).with_suffix("").parts))
        if not name.endswith("__main__") and ".scripts." not in name:
            importlib.import_module(name.removesuffix(".__init__"))
    todo, found = list(Report.__subclasses__()), []
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return [c for c in found if c.__module__.startswith("forkkit.")]


def test_every_report_is_one_class_that_writes_and_reads_it() -> None:
    """#34 item 2: each document type is the DOC of exactly one frozen
    report class, and the generic reader can read every field it writes."""
    classes = _report_classes()
    by_doc: dict[str, list[str]] = {}
    for cls in classes:
        by_doc.setdefault(cls.DOC.schema, []).append(cls.__qualname__)
        assert dataclasses.is_dataclass(cls), cls
        assert cls.__dataclass_params__.frozen, cls
        readable(cls)  # TypeError: a field no reader can read
    assert {d.schema: len(by_doc.get(d.schema, [])) for d in DOC_TYPES} == {
        d.schema: 1 for d in DOC_TYPES
    }, by_doc


def test_a_field_no_reader_reads_is_named() -> None:
    @dataclasses.dataclass(frozen=True)
    class Bad:
        paths: list[Path]

    with pytest.raises(TypeError, match=r"Bad.paths: no reader"):
        readable(Bad)


def test_doc_types_are_distinct() -> None:
    assert len({d.schema for d in DOC_TYPES}) == len(DOC_TYPES)
    assert all(d.schema.startswith("forkkit.") and d.version >= 1 for d in DOC_TYPES)


def test_written_reports_carry_schema_and_version(tmp_path: Path) -> None:
    report = RebaseDoc(old="toy 1.0", new="toy 1.1", notes=("a",))
    _, js = write_reports(tmp_path, "r", markdown="# r\n", report=report)
    doc = json.loads(js.read_text())
    assert (doc["schema"], doc["version"], doc["old"]) == (
        "forkkit.rebase",
        1,
        "toy 1.0",
    )
    assert read_report_json(js, doc=REBASE, hint="h") == doc
    assert RebaseDoc.read(js, hint="h") == report  # one type writes and reads it


@pytest.mark.parametrize(
    ("data", "why"),
    [
        ({"valid": True}, "not a red/green report (no schema, expected"),
        (REBASE.stamp({}), "not a red/green report (schema 'forkkit.rebase'"),
        (
            {**PROOF.stamp({}), "version": 3},
            "version 3; this forkkit reads version 2",
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


def test_one_place_writes_reports_and_decides_their_folder() -> None:
    """#34 item 3: a report's JSON is only ever its class's document
    (``Report.document``: nobody stamps a dict by hand), and only the
    workdir decides where a report folder is and publishes it."""
    root = Path(__file__).resolve().parents[2]
    found = []
    for path in [*(root / "src").rglob("*.py"), *(root / "scripts").rglob("*.py")]:
        text = path.read_text()
        rel = path.relative_to(root).as_posix()
        if ".stamp(" in text and rel != "src/forkkit/output/report.py":
            found.append(f"{rel}: stamps a document by hand")
        if "ReportFolder(" in text and rel != "src/forkkit/workdir.py":
            found.append(f"{rel}: makes its own report folder")
    assert found == []


@pytest.mark.parametrize(
    ("v1", "recipe"),
    [
        (
            {
                "mode": "red-green",
                "base_label": "HEAD without fix 'a'",
                "fix": {"id": "a"},
            },
            {"kind": "revert-hunks", "fix": "a", "rev": ""},
        ),
        (
            {
                "mode": "red-green",
                "base_label": "upstream base",
                "base": {"commit": "c"},
            },
            {"kind": "runtime-from", "fix": "", "rev": "c"},
        ),
        (
            {"mode": "guard", "base_label": "HEAD without fix 'a'", "fix": {"id": "a"}},
            {"kind": "guard", "fix": "", "rev": ""},
        ),
    ],
)
def test_a_version_1_proof_is_read_with_its_red_recipe(
    v1: dict[str, object], recipe: dict[str, str], tmp_path: Path
) -> None:
    """#45: the recipe is a typed field of version 2; a version 1 report
    (no such field) is upgraded on read, the only place a label is read."""
    from forkkit.output.doc import to_json
    from forkkit.services.proof.doc import ProofDoc

    data = {
        "schema": "forkkit.red-green",
        "version": 1,
        "upstream": {"ident": "sdist:toy==1.0"},
        "classification": {},
        **v1,
    }
    doc = ProofDoc.of(data, where="old.json")
    assert to_json(doc.red_recipe) == recipe
    path = tmp_path / "red_green.json"
    path.write_text(json.dumps(data))
    assert ProofDoc.read(path, hint="h").red_recipe == doc.red_recipe
    assert doc.document()["version"] == 2 and "red_recipe" in doc.document()
    with pytest.raises(ValueError, match="of version 3"):
        ProofDoc.of({**data, "version": 3}, where="new.json")
