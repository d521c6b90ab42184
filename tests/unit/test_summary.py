# SPDX-License-Identifier: Apache-2.0
"""Job summaries: with ``$GITHUB_STEP_SUMMARY`` set, red-green, rebase and
reconcile append their Markdown report to it (toy project, real git + pytest)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit.cli import main
from forkkit.config import ForkConfig
from forkkit.output import report
from forkkit.output.report import append_step_summary
from tests.synthetic import (
    BUGGY,
    CALC_CONTEXT_MOVED,
    RECON_DISJOINT,
    SyntheticUpstream,
    toy_release,
    write_patch,
)


@pytest.fixture
def summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A job summary file that already holds an earlier step's output."""
    path = tmp_path / "step_summary.md"
    path.write_text("# earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(path))
    return path


def appended(summary: Path) -> str:
    text = summary.read_text()
    assert text.startswith("# earlier step\n"), "the summary must be appended to"
    return text.removeprefix("# earlier step\n")


def test_unset_summary_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert append_step_summary("# report\n") is None
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "")
    assert append_step_summary("# report\n") is None
    assert list(tmp_path.iterdir()) == []


def test_summary_is_appended_and_cut_to_githubs_limit(
    summary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert append_step_summary("# one") == summary
    assert append_step_summary("# two\n") == summary
    assert appended(summary) == "# one\n\n# two\n\n"
    monkeypatch.setattr(report, "STEP_SUMMARY_LIMIT", 200)
    append_step_summary("x" * 500)
    assert summary.stat().st_size <= 200
    assert summary.read_text().endswith("see the uploaded report)_\n")


def test_unwritable_summary_is_a_warning(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "such" / "file"))
    assert append_step_summary("# report\n") is None
    assert "cannot append to the job summary" in capsys.readouterr().err


@pytest.mark.e2e
def test_red_green_appends_its_report(toy_project: ForkConfig, summary: Path) -> None:
    assert main(["--config", str(toy_project.path), "red-green"]) == 0
    folder = toy_project.work.report_dir("red_green")
    text = appended(summary)
    assert text.startswith((folder / "summary.md").read_text().rstrip("\n"))
    assert (folder / "toy-fix" / "red_green.md").read_text().rstrip("\n") in text


def test_rebase_appends_its_report(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, summary: Path
) -> None:
    toy_upstream.publish("1.1", toy_release({"toy/calc.py": CALC_CONTEXT_MOVED}))
    args = ["rebase", "--onto", "toy==1.1", "--no-semantic", "--no-red-green"]
    assert main(["--config", str(toy_project.path), *args]) == 0
    md = toy_project.work.report_dir("rebase") / "rebase.md"
    assert appended(summary) == md.read_text().rstrip("\n") + "\n\n"


@pytest.mark.e2e
def test_reconcile_appends_its_report(
    toy_project: ForkConfig, summary: Path, tmp_path: Path
) -> None:
    patch = write_patch(BUGGY, RECON_DISJOINT, tmp_path / "greet.patch")
    argv = ["--config", str(toy_project.path), "reconcile", "--resend", "off"]
    argv += ["--with", str(patch)]
    assert main(argv) == 0
    md = toy_project.work.report_dir("reconcile") / "reconcile.md"
    assert appended(summary) == md.read_text().rstrip("\n") + "\n\n"


@pytest.mark.e2e
def test_a_report_names_its_files_relative_to_its_folder(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JSON names its JUnit files and logs relative to the report folder
    (no run folder's path, no local path); the dispatcher names the report
    where it was published, after the Markdown on stdout."""
    out = tmp_path / "proof"
    assert (
        main(["--config", str(toy_project.path), "red-green", "--out", str(out)]) == 0
    )
    captured = capsys.readouterr()
    assert captured.out.startswith("# Red/green of every fix")  # the summary
    assert f"report: {out / 'summary.md'}\njson: {out / 'summary.json'}" in (
        captured.err
    )
    assert "(toy-fix/red_green.md)" in (out / "summary.md").read_text()
    fix = out / "toy-fix"
    text = (fix / "red_green.json").read_text()
    assert ".run-" not in text and str(out) not in text
    data = json.loads(text)
    for name in ("red", "green", "related"):
        assert (fix / data[name]["junit"]).is_file()
        assert (fix / data[name]["log"]).is_file()
