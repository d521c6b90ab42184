"""``forkkit verify REPORT.json``: replay a red/green report on the toy fork."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from forkkit import cli
from forkkit.commands.verify.model import (
    differences,
    not_replayed,
    refusal,
    replay_spec,
    unsafe_pytest_arg,
)
from forkkit.commands.verify.run import _current
from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.output.report import PROOF
from forkkit.services.proof.doc import (
    HunkDoc,
    ProofDoc,
    RepeatDoc,
    RunDoc,
    Upstream,
)
from forkkit.services.proof.run import prove
from tests.synthetic import SyntheticUpstream, make_project, toy_breaking_fix_changes

F2P = "tests/test_fix.py::test_limit_reaches_n"


def _report(cfg: ForkConfig, tmp_path: Path) -> Path:
    prove(Line.of(cfg), materialize(cfg), out_dir=tmp_path / "rg", stream=False)
    return tmp_path / "rg" / "red_green.json"


def _edited(report: Path, dest: Path, **changes: Any) -> Path:
    doc = json.loads(report.read_text())
    for path, value in changes.items():
        *keys, last = path.split("__")
        target = doc
        for key in keys:
            target = target[key]
        target[last] = value
    dest.write_text(json.dumps(doc))
    return dest


def _verify(cfg: ForkConfig, report: Path, *args: str) -> int:
    return cli.main(["--config", str(cfg.path), "verify", str(report), *args])


@pytest.mark.e2e
def test_verify_passes_on_a_fresh_report_and_fails_on_an_edited_one(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report(toy_project, tmp_path)
    assert _verify(toy_project, report) == 0
    out = capsys.readouterr().out
    assert "the replay matches the report (1 classified test(s)" in out
    replay = toy_project.work.report_dir("verify") / "red_green.json"
    assert json.loads(replay.read_text())["red"]["cached"] is False  # fresh
    assert report.is_file()  # the verified report is left alone

    edited = _edited(
        report,
        tmp_path / "edited.json",
        classification__FAIL_TO_PASS=[],
        classification__PASS_TO_PASS=[F2P],
    )
    assert _verify(toy_project, edited) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("differs from the report in 1 place(s):")
    assert lines[1:] == [f"- {F2P}: PASS_TO_PASS in the report, FAIL_TO_PASS now"]


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"upstream__ident": "sdist:toy==1.0#sha256=" + "0" * 64}, "another pin"),
        ({"patches": [{"name": "0001-other.patch", "commit": "x"}]}, "another series"),
        ({"fork_head__tree": "0" * 40}, "made from another series (fork tree 0000"),
        ({"upstream_base__tree": "0" * 40}, "made on another pin (base tree 0000"),
        ({"version": 0}, "a red/green report of version 0; this forkkit reads"),
        ({"schema": "forkkit.rebase"}, "not a red/green report (schema 'forkkit.re"),
    ],
)
def test_verify_refuses_a_report_of_another_pin_or_series(
    toy_project: ForkConfig,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    changes: dict[str, Any],
    why: str,
) -> None:
    tree = materialize(toy_project)
    doc = PROOF.stamp(
        {
            "classification": {"FAIL_TO_PASS": [F2P]},
            "upstream": {"ident": toy_project.upstream.ident},
            "upstream_base": {"tree": tree.base_tree},
            "fork_head": {"tree": tree.repo.tree(tree.head)},
            "patches": [{"name": n, "commit": c} for n, c in tree.patch_commits],
            "files": [{"path": "toy/calc.py", "role": "runtime"}],
            "tests": ["tests/test_fix.py"],
            "related_suites": ["tests"],
            "pytest_args": [],
            "deselected": [],
        }
    )
    report = tmp_path / "report.json"
    report.write_text(json.dumps(doc))
    capsys.readouterr()
    assert _edited(report, report, **changes) == report
    assert _verify(toy_project, report) == 2
    err = [
        line for line in capsys.readouterr().err.splitlines() if "[forkkit]" not in line
    ]
    assert len(err) == 1 and err[0].startswith("forkkit: error: ") and why in err[0]
    assert not toy_project.work.report_dir("verify").exists()  # nothing ran


@pytest.mark.e2e
def test_verify_refuses_a_report_of_another_series_on_disk(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = _report(toy_project, tmp_path)
    other = make_project(
        tmp_path / "other", toy_upstream, "1.0", changes=toy_breaking_fix_changes()
    )
    spec = replay_spec(ProofDoc.of(json.loads(report.read_text()), where="r"), "r")
    assert refusal(spec, _current(toy_project, None)) is None
    assert "another series" in (refusal(spec, _current(other, None)) or "")
    assert _verify(other, report) == 2
    assert "made from another series" in capsys.readouterr().err


def test_verify_refuses_unreadable_reports(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "list.json").write_text("[]")
    (tmp_path / "other.json").write_text('{"valid": true}')
    for name, why in [
        ("missing.json", "no such red/green report"),
        ("bad.json", "cannot read the red/green report"),
        ("list.json", "not a JSON object"),
        ("other.json", "not a red/green report (no schema"),
    ]:
        assert _verify(toy_project, tmp_path / name) == 2
        assert why in capsys.readouterr().err


def test_differences_one_line_each() -> None:
    up = Upstream("sdist:toy==1.0#sha256=0", "toy 1.0")
    base = ProofDoc(
        upstream=up,
        classification={"FAIL_TO_PASS": ("a", "b"), "PASS_TO_PASS": ("c",)},
        valid=True,
        related=RunDoc(counts={"passed": 3, "failed": 0}),
        hunks=(HunkDoc(hunk="h1", turns_red=("a",)),),
    )
    assert differences(base, base) == []
    fresh = ProofDoc(
        upstream=up,
        classification={"FAIL_TO_PASS": ("a",), "FAIL_TO_FAIL": ("b",)},
        valid=False,
        related=RunDoc(counts={"passed": 2, "failed": 1}),
        hunks=(HunkDoc(hunk="h1", turns_red=()),),
    )
    assert differences(base, fresh) == [
        "b: FAIL_TO_PASS in the report, FAIL_TO_FAIL now",
        "c: PASS_TO_PASS in the report, absent now",
        "valid: true in the report, false now",
        "related.counts: failed 0, passed 3 in the report, failed 1, passed 2 now",
        "hunk h1: turns red [a] in the report, [] now",
    ]


def test_the_parts_a_plain_replay_does_not_redo_are_named() -> None:
    """A report made with --hunks and --repeat: a replay without them says so
    (it said nothing before: the fresh document always had both keys)."""
    up = Upstream("sdist:toy==1.0#sha256=0", "toy 1.0")
    report = ProofDoc(
        upstream=up,
        classification={},
        hunks=(HunkDoc(hunk="h1"),),
        repeat=RepeatDoc(n=2, seed=1),
    )
    fresh = ProofDoc(upstream=up, classification={})
    assert not_replayed(report, fresh) == ("the hunk matrix", "the flake check")
    assert not_replayed(fresh, fresh) == ()


@pytest.mark.parametrize(
    ("args", "bad"),
    [
        ((), None),
        (("-k", "mamba and not slow", "-x", "--tb=short", "-q"), None),
        (("-p", "no:cacheprovider", "-rA", "--deselect", "t.py::x"), None),
        (("--junitxml=/tmp/elsewhere.xml",), "--junitxml=/tmp/elsewhere.xml"),
        (("-p", "evil_plugin"), "-p evil_plugin"),
        (("-o", "cache_dir=/"), "-o"),
        (("--rootdir", "/"), "--rootdir"),
    ],
)
def test_verify_passes_on_only_selection_and_output_options(
    args: tuple[str, ...], bad: str | None
) -> None:
    """Issue 25, 5: verify gave a report's pytest_args to pytest verbatim."""
    assert unsafe_pytest_arg(args) == bad


@pytest.mark.e2e
def test_verify_refuses_a_report_with_a_pytest_argument_that_writes_files(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = _report(toy_project, tmp_path)
    target = tmp_path / "elsewhere.xml"
    edited = _edited(report, tmp_path / "e.json", pytest_args=[f"--junitxml={target}"])
    assert _verify(toy_project, edited) == 2
    err = capsys.readouterr().err
    assert "a replay does not pass on" in err and not target.exists()


@pytest.mark.e2e
def test_verify_refuses_a_report_made_in_another_test_environment(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24, 3: red/green's JSON named no test environment, so a report
    made with other packages installed replayed as if it were this one."""
    report = _report(toy_project, tmp_path)
    doc = json.loads(report.read_text())
    assert len(doc["testenv"]["packages"]) == 64 and doc["testenv"]["key"]
    edited = _edited(report, tmp_path / "e.json", testenv__packages="0" * 64)
    capsys.readouterr()
    assert _verify(toy_project, edited) == 2
    err = capsys.readouterr().err
    assert "made in another test environment (packages 000000000000" in err
    assert not toy_project.work.report_dir("verify").exists()  # nothing ran
