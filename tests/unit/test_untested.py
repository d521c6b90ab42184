# SPDX-License-Identifier: Apache-2.0
"""#46 item 2: a fix carried without a test is declared (``proof = "none"``
with a reason), never proven and never failing the line: ``fix add``
refuses a silent one, red-green gives it its own row. Real git and pytest
on a toy line."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.config import ForkConfig, load_config
from forkkit.errors import ForkkitError
from forkkit.line import Line
from forkkit.patches.retired import Retired, parse_retired, render_retired
from forkkit.services.rebase.model import Options
from forkkit.services.rebase.run import rebase, resolve_target
from tests.synthetic import (
    COUNT_BUGGY,
    COUNT_FIXED,
    FIX_TEST,
    FIXED_CALC,
    SyntheticUpstream,
    make_patches,
    make_project,
    toy_release,
    toy_testenv_python,
)

WHY = "security backport of GHSA-xxxx, no test upstream"


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".forkkit" not in p.parts
    }


@pytest.fixture
def line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A toy line carrying ``limit`` (with its test) and the runtime-only
    patch of ``count`` in a folder of its own (not in the series yet)."""
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    upstream = SyntheticUpstream(tmp_path / "up")
    upstream.publish("1.0", toy_release({"toy/count.py": COUNT_BUGGY}))
    changes = [
        ("[Bugfix] limit", {"toy/calc.py": FIXED_CALC, "tests/test_fix.py": FIX_TEST})
    ]
    cfg = make_project(tmp_path / "p", upstream, "1.0", changes, fix_ids=["limit"])
    base = {
        **upstream.versions["1.0"],
        "toy/calc.py": FIXED_CALC,
        "tests/test_fix.py": FIX_TEST,
    }
    make_patches(
        base,
        [("[Security] count", {"toy/count.py": COUNT_FIXED})],
        tmp_path / "new",
        fix_ids=[""],
    )
    return cfg.path


def _new_patch(tmp_path: Path) -> str:
    (name,) = [p.name for p in (tmp_path / "new").glob("*.patch")]
    return str(tmp_path / "new" / name)


def test_fix_add_refuses_a_fix_without_a_test_unless_declared(
    line: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _files(line.parent)
    argv = ["--config", str(line), "fix", "add", "sec", _new_patch(tmp_path)]
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if "error" in ln]
    assert len(err) == 1 and "--untested" in err[0], err
    assert _files(line.parent) == before
    assert cli.main([*argv, "--untested", WHY, "--related"]) == 0
    out = capsys.readouterr().out
    assert "proof: none" in out and "listed unproven, declared" in out
    (decl,) = [d for d in load_config(line).fixes if d.id == "sec"]
    assert decl.untested == WHY
    assert 'proof = "none"' in line.read_text()


@pytest.mark.e2e
def test_red_green_names_a_declared_fix_unproven_and_exits_0(
    line: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = ["--config", str(line)]
    patch = _new_patch(tmp_path)
    assert cli.main([*conf, "fix", "add", "sec", patch, "--untested", WHY]) == 0
    assert cli.main([*conf, "red-green", "--parallel", "off"]) == 0
    folder = line.parent / ".forkkit" / "reports" / "red_green"
    doc = json.loads((folder / "summary.json").read_text())
    assert doc["valid"] is True
    rows = [(r["fix"], r["mode"], r["valid"], r["declared"]) for r in doc["fixes"]]
    assert rows == [("sec", "declared", False, WHY), ("limit", "red-green", True, "")]
    assert f"unproven (declared: {WHY})" in (folder / "summary.md").read_text()
    assert not (folder / "sec").exists()  # nothing ran for it
    # asked for alone: its row again, and 0
    assert cli.main([*conf, "red-green", "--fix", "sec"]) == 0
    doc = json.loads((folder / "summary.json").read_text())
    assert [r["fix"] for r in doc["fixes"]] == ["sec", "limit"] and doc["valid"]


@pytest.mark.parametrize(
    ("table", "says"),
    [
        ('proof = "none"\n', "needs a reason"),
        (f'reason = "{WHY}"\n', "a reason is for proof"),
        ('proof = "maybe"\nreason = "x"\n', "proof 'maybe'"),
    ],
)
def test_a_bad_declaration_is_one_line(line: Path, table: str, says: str) -> None:
    text = line.read_text().replace('id = "limit"\n', f'id = "limit"\n{table}')
    line.write_text(text)
    with pytest.raises(ForkkitError, match=says):
        load_config(line)


def _only_untested(tmp_path: Path) -> tuple[ForkConfig, SyntheticUpstream]:
    """A toy line of one fix, ``sec``, declared without a test."""
    upstream = SyntheticUpstream(tmp_path / "up")
    upstream.publish("1.0", toy_release({"toy/count.py": COUNT_BUGGY}))
    changes = [("[Security] count", {"toy/count.py": COUNT_FIXED})]
    cfg = make_project(tmp_path / "p", upstream, "1.0", changes, fix_ids=["sec"])
    text = cfg.path.read_text().replace(
        'id = "sec"\n', f'id = "sec"\nproof = "none"\nreason = "{WHY}"\n'
    )
    cfg.path.write_text(text)
    return cfg, upstream


def test_a_rebase_of_only_untested_fixes_goes_on_without_a_proof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing to prove is not an error: the rebase says so, unproven."""
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    cfg, upstream = _only_untested(tmp_path)
    upstream.publish("1.1", toy_release({"toy/count.py": COUNT_BUGGY, "toy/x.py": ""}))
    line = Line.of(load_config(cfg.path))
    result = rebase(line, resolve_target(line, "toy==1.1"), Options(semantic=False))
    assert result.ok and result.unproven
    assert any("no red/green" in n for n in result.notes), result.notes


GHSA = "GHSA-2c2j-9gv5-cj73"
PR_URL = "https://github.com/vllm-project/vllm/pull/43426"


@pytest.mark.e2e
def test_a_backport_keeps_its_advisory_and_upstream_pr(
    line: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#46 item 7: the advisory and the upstream PR a vendor's backport
    carries are kept in fork.toml and shown in the summary."""
    conf = ["--config", str(line)]
    argv = [*conf, "fix", "add", "sec", _new_patch(tmp_path), "--untested", WHY]
    capsys.readouterr()
    assert cli.main([*argv, "--advisory", "GHSA-nope"]) == 2
    assert "is not a GHSA-xxxx-xxxx-xxxx" in capsys.readouterr().err
    provenance = ["--advisory", GHSA, "--upstream-pr", PR_URL]
    assert cli.main([*argv, *provenance]) == 0
    (decl,) = [d for d in load_config(line).fixes if d.id == "sec"]
    assert (decl.advisory, decl.upstream_pr) == (GHSA, PR_URL)
    assert cli.main([*conf, "red-green", "--parallel", "off"]) == 0
    summary = line.parent / ".forkkit" / "reports" / "red_green" / "summary.md"
    assert f"({GHSA}; backports {PR_URL})" in summary.read_text()
    # pr-body: the untested fix's description says first that nothing proves it
    out = tmp_path / "pr.md"
    assert cli.main([*conf, "pr-body", "--fix", "sec", "--output", str(out)]) == 0
    body = out.read_text()
    assert "**Not proven: no test.**" in body and "GHSA" in body
    assert body.index("Not proven") < body.index("### Provenance")
    assert f"backports {PR_URL}" in body and "`toy/count.py`" in body
    assert str(tmp_path) not in body and "## AI assistance" in body


def test_a_retirement_record_keeps_them_and_an_old_one_reads_as_before() -> None:
    base = Retired(
        name="0001-x.patch",
        subject="x",
        applied_upstream="toy 1.1",
        how="absorbed-textual",
        evidence="e",
        retired_from="toy 1.0",
        sha256="0" * 64,
    )
    assert "advisory" not in render_retired([base])  # written only when set
    backport = dataclasses.replace(base, advisory=GHSA, upstream_pr=PR_URL)
    text = render_retired([backport])
    assert parse_retired(text) == (backport,)


def test_red_green_of_only_untested_fixes_needs_no_test_venv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing runs, so no venv is built (an interpreter that is not there
    would fail the first use), and the summary says nothing was proven."""
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", str(tmp_path / "no-python"))
    cfg, _ = _only_untested(tmp_path)
    assert cli.main(["--config", str(cfg.path), "red-green"]) == 0
    out = capsys.readouterr().out
    assert "nothing to prove: no fix here has a test" in out
    assert "every fix proven" not in out
