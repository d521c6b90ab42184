"""``forkkit reconcile`` end to end on synthetic upstreams (real git + pytest)."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import pytest

from forkkit.cli import main
from forkkit.commands.reconcile import cli as reconcile_cli
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.line import Line
from forkkit.output.doc import from_json
from forkkit.services.reconcile.cells import broken_modules
from forkkit.services.reconcile.competitor import parse_competitor
from forkkit.services.reconcile.doc import ReconcileDoc
from forkkit.services.reconcile.model import Options
from forkkit.services.reconcile.resend import describe_setup, preset_options
from forkkit.services.reconcile.run import reconcile
from forkkit.vcs.git import Git
from tests.synthetic import (
    RECON_BASE,
    RECON_CONFLICT,
    RECON_DISJOINT,
    RECON_OURS,
    RECON_SAME_FILE,
    SyntheticUpstream,
    make_project,
    push_pull_request,
    recon_release,
    recon_release_with_helper,
    toy_testenv_python,
    write_files,
    write_patch,
)

Project = tuple[SyntheticUpstream, ForkConfig]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    """Our fork (limit fix + its test) over a toy 1.0 with two bugs."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    up = SyntheticUpstream(tmp_path / "upstream")
    up.publish("1.0", RECON_BASE)
    cfg = make_project(
        tmp_path / "project", up, "1.0", [("[Bugfix] limit reaches n", RECON_OURS)]
    )
    return up, cfg


def rows(result_json: dict[str, object]) -> dict[str, dict[str, str]]:
    """``"side: CATEGORY"`` -> {runtime: cell} from the JSON report."""
    out: dict[str, dict[str, str]] = {}
    matrix = result_json["matrix"]
    assert isinstance(matrix, list)
    for row in matrix:
        out[f"{row['side']}: {row['category']}"] = row["cells"]
    return out


def last_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The last console line (stderr) of the command that just ran."""
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_parse_competitor(tmp_path: Path) -> None:
    patch = tmp_path / "x.patch"
    patch.write_text("")
    assert parse_competitor(str(patch), "vllm").kind == "patch"
    rel = parse_competitor("vllm==0.32.0", "vllm")
    assert (rel.kind, rel.version) == ("release", "0.32.0")
    assert parse_competitor("pull/53802/head", "vllm").kind == "git"
    with pytest.raises(ForkkitError, match="expected vllm==VERSION"):
        parse_competitor("torch==2.0", "vllm")
    with pytest.raises(ForkkitError, match="not a file"):
        parse_competitor("two words", "vllm")
    for missing in ("missing.patch", str(tmp_path / "gone"), "./fix.diff"):
        with pytest.raises(ForkkitError, match="no such file"):
            parse_competitor(missing, "vllm")


@pytest.mark.e2e
def test_disjoint_competitor_as_mbox(project: Project, tmp_path: Path) -> None:
    _, cfg = project
    patch = write_patch(RECON_BASE, RECON_DISJOINT, tmp_path / "greet.patch")
    result, md, js = reconcile(Line.of(cfg), str(patch))
    assert result.overlap.kind == "disjoint"
    assert result.theirs.paths == (
        "tests/test_greet.py",
        "tests/test_name_kept.py",
        "toy/other.py",
    )
    data = json.loads(js.read_text())
    r = rows(data)
    assert r["ours: FAIL_TO_PASS"] == {
        "base": "0/1 pass, 1 fail",
        "ours": "1/1 pass",
        "theirs": "0/1 pass, 1 fail",
        "ours+theirs": "1/1 pass",
        "theirs+ours": "1/1 pass",
    }
    # Their test imports a function only their change adds.
    assert r["theirs: FAIL_TO_PASS"] == {
        "base": "error (import)",
        "ours": "error (import)",
        "theirs": "1/1 pass",
        "ours+theirs": "1/1 pass",
        "theirs+ours": "1/1 pass",
    }
    # Both orders of the stack build one tree: it runs once.
    stacked = result.cells[("ours", "theirs+ours")]
    assert stacked.reused == "ours@ours+theirs"
    answers = data["answers"]
    assert answers["stack"]["verdict"] == (
        "yes: both orders merge 3-way cleanly, into the same tree"
    )
    cross = {(c["tests"], c["runtime"]): c for c in answers["cross"]}
    assert cross[("theirs", "ours")]["fail_to_pass"] == [0, 1]
    assert cross[("ours", "theirs")]["fail_to_pass"] == [0, 1]
    assert cross[("ours", "ours+theirs")]["fail_to_pass"] == [1, 1]
    assert ("ours", "theirs+ours") not in cross  # the same tree: one line
    assert answers["resend"]["runtimes"] == []  # not asked (Options.resend)
    # Their runtime file is not ours (nor in fork.toml): base restores the union.
    assert answers["runtime_files"] == {
        "ours": ["toy/calc.py"],
        "theirs": ["toy/other.py"],
        "union": ["toy/calc.py", "toy/other.py"],
    }
    # test_greet cannot import on base, test_name_kept still runs beside it
    assert r["theirs: PASS_TO_PASS"]["base"] == "1/1 pass"
    # per fix: the competitor does not meet our one fix
    assert data["fixes"] == [{"fix": "toy-fix", "shared_runtime_files": []}]
    text = md.read_text()
    assert "| `toy-fix` | none: disjoint |" in text
    assert "touch **no common file**" in text
    assert "| ours: FAIL_TO_PASS (1) | 0/1 pass, 1 fail | 1/1 pass |" in text
    # A second reconcile reuses every run (same trees, same pytest commands).
    again, md2, _ = reconcile(Line.of(cfg), str(patch))
    ran = [c for c in again.cells.values() if c.status == "ran"]
    assert ran and all(c.cached for c in ran)
    # A cached result lands in the report folder like a fresh one (the one
    # result cache of testing/cache.py, shared with red-green and rebase).
    for c in ran:
        if not c.reused:
            name = f"{c.side}-on-{c.runtime}"
            assert (md2.parent / "junit" / f"{name}.xml").is_file(), name
            assert (md2.parent / "junit" / f"{name}.log").is_file(), name
    assert again.matrix.rows == result.matrix.rows
    assert "reused from earlier reconcile runs" in md2.read_text()
    fresh, _, _ = reconcile(Line.of(cfg), str(patch), Options(fresh=True))
    assert not any(c.cached for c in fresh.cells.values())


@pytest.mark.e2e
def test_same_file_competitor_as_plain_diff(project: Project, tmp_path: Path) -> None:
    _, cfg = project
    patch = write_patch(RECON_BASE, RECON_SAME_FILE, tmp_path / "sq.diff", mbox=False)
    assert not patch.read_text().startswith("From ")
    result, _, js = reconcile(Line.of(cfg), str(patch))
    assert result.overlap.kind == "same-files"
    (f,) = result.overlap.files
    assert f.path == "toy/calc.py" and f.pairs == () and f.shared_symbols == ()
    assert [h.symbols for h in f.ours] == [("limit",)]
    assert [h.symbols for h in f.theirs] == [("square",)]
    r = rows(json.loads(js.read_text()))
    assert r["ours: FAIL_TO_PASS"]["ours+theirs"] == "1/1 pass"
    assert r["theirs: FAIL_TO_PASS"]["ours+theirs"] == "1/1 pass"
    assert r["theirs: FAIL_TO_PASS"]["ours"] == "0/1 pass, 1 fail"


@pytest.mark.e2e
def test_conflicting_competitor_as_git_ref(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    up, cfg = project
    push_pull_request(up, 7, "1.0", RECON_CONFLICT)
    argv = ["--config", str(cfg.path), "reconcile", "--resend", "off"]
    rc = main([*argv, "--with", "pull/7/head"])
    # partial: both sides' tests on both stacks are conflicts, not measurements
    assert rc == 1
    assert last_line(capsys) == (
        "[forkkit] reconcile: partial: 6 of 10 cell(s) measured; not measured: "
        "ours tests on ours+theirs (conflict); ours tests on theirs+ours (conflict); "
        "theirs tests on ours+theirs (conflict); theirs tests on theirs+ours "
        "(conflict)"
    )
    data = json.loads((cfg.work.report_dir("reconcile") / "reconcile.json").read_text())
    assert (data["schema"], data["version"]) == ("forkkit.reconcile", 1)
    doc = from_json(ReconcileDoc, data, where="reconcile.json")  # as pr-body
    assert doc.answers.stack.verdict == data["answers"]["stack"]["verdict"]
    assert len(doc.answers.cross) == len(data["answers"]["cross"]) > 0
    assert {s.side for s in doc.sides} == {"ours", "theirs"}
    assert data["measurement"]["verdict"] == "partial"
    assert data["measurement"]["not_measured"] == [
        {"side": s, "runtime": k, "reason": "conflict"}
        for s in ("ours", "theirs")
        for k in ("ours+theirs", "theirs+ours")
    ]
    text = (cfg.work.report_dir("reconcile") / "reconcile.md").read_text()
    assert "**Partial**: 6 of 10 cell(s) of the behaviour matrix" in text
    assert data["answers"]["stack"]["verdict"] == (
        "no: ours+theirs conflicts, theirs+ours conflicts"
    )
    assert data["competitor"] == {"ref": "pull/7/head", "kind": "git"}
    ov = data["overlap"]
    assert ov["kind"] == "overlapping"
    (f,) = ov["files"]
    assert f["path"] == "toy/calc.py" and f["shared_symbols"] == ["limit"]
    assert f["pairs"][0]["distance"] == 0
    both = [c for c in data["cells"] if c["runtime"] == "ours+theirs"]
    assert {c["status"] for c in both} == {"conflict"}
    assert "toy/calc.py: our runtime hunk 1/1" in both[0]["conflict"][0]
    r = rows(data)
    # Their approach passes our regression test; ours fails one of theirs.
    assert r["ours: FAIL_TO_PASS"]["theirs"] == "1/1 pass"
    assert r["theirs: FAIL_TO_PASS"]["ours"] == "1/2 pass, 1 fail"
    assert r["theirs: FAIL_TO_PASS"]["ours+theirs"] == "conflict"


def test_git_ref_fetch_failures_are_one_line(
    project: Project, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, cfg = project
    cases = [
        ["--with", "pull/99/head"],  # no such ref in the (local bare) upstream
        ["--with", "pull/1/head", "--git-url", (tmp_path / "nowhere.git").as_uri()],
    ]
    for args in cases:
        assert main(["--config", str(cfg.path), "reconcile", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        errors = [ln for ln in err if not ln.startswith("[forkkit]")]
        assert len(errors) == 1, err
        assert errors[0].startswith("forkkit: error: ") and "cannot fetch" in errors[0]
        assert "--with PATH.patch" in errors[0]


@pytest.mark.e2e
def test_patch_that_does_not_apply_names_the_hunk(
    project: Project, tmp_path: Path
) -> None:
    _, cfg = project
    other_base = {**RECON_BASE, "toy/calc.py": "def limit(n):\n    return n + 5\n"}
    patch = write_patch(
        other_base,
        {"toy/calc.py": "def limit(n):\n    return n\n"},
        tmp_path / "elsewhere.patch",
    )
    with pytest.raises(ForkkitError, match=r"hunk 1/1 of toy/calc.py .* toy 1.0"):
        reconcile(Line.of(cfg), str(patch))


@pytest.mark.e2e
def test_release_competitor(project: Project) -> None:
    up, cfg = project
    sdist, sha = up.publish("1.1", recon_release(RECON_CONFLICT))
    opts = Options(sha256=sha, sdist_url=sdist.as_uri())
    result, md, js = reconcile(Line.of(cfg), "toy==1.1", opts)
    # Scope: the files we touch + changed files in our test folder (tests/);
    # toy/other.py and tests/deep/ changed in 1.1 but are out of scope.
    assert result.theirs.paths == (
        "tests/test_clamp.py",
        "tests/test_other.py",
        "toy/calc.py",
    )
    assert [r.key for r in result.runtimes][-2:] == ["1.1", "1.1+ours"]
    r = rows(json.loads(js.read_text()))
    assert r["ours: FAIL_TO_PASS"]["1.1"] == "1/1 pass"
    assert r["ours: FAIL_TO_PASS"]["1.1+ours"] == "conflict"
    # Their tests are classified on base vs their full tree; test_other
    # changed in 1.1 for a toy/other.py change outside our files, so it passes
    # only there.
    theirs = next(s for s in result.sides if s.side == "theirs")
    assert (theirs.base_runtime, theirs.own_runtime) == ("base", "1.1")
    assert r["theirs: FAIL_TO_PASS"] == {
        "base": "0/3 pass, 3 fail",
        "ours": "1/3 pass, 2 fail",
        "theirs": "2/3 pass, 1 fail",
        "ours+theirs": "conflict",
        "theirs+ours": "conflict",
        "1.1": "3/3 pass",
        "1.1+ours": "conflict",
    }
    assert "in the whole toy 1.1 tree" in md.read_text()


@pytest.mark.e2e
def test_tests_only_competitor_reuses_identical_trees(
    project: Project, tmp_path: Path
) -> None:
    """A competitor that only adds tests: its runtime equals base, so cells with
    identical trees are run once; ``shared`` keeps their tests in our files."""
    _, cfg = project
    theirs_test = (
        "from toy.calc import limit\n\n\ndef test_limit_one():\n"
        "    assert limit(1) == 1\n"
    )
    patch = write_patch(
        RECON_BASE,
        {"tests/test_fix.py": theirs_test, "tests/test_more.py": theirs_test},
        tmp_path / "tests-only.patch",
    )
    result, _, _ = reconcile(Line.of(cfg), str(patch), Options(their_tests="shared"))
    assert result.theirs.runtime_paths == ()
    theirs_side = next(s for s in result.sides if s.side == "theirs")
    assert theirs_side.targets == ("tests/test_fix.py",)
    reused = result.cells[("ours", "theirs")]
    assert reused.reused == "ours@base"
    assert reused.report == result.cells[("ours", "base")].report
    r = {f"{row.side}: {row.category}": row.cells for row in result.matrix.rows}
    # their test passes only where our runtime change is
    assert r["theirs: FAIL_TO_FAIL"] == (
        "0/1 pass, 1 fail",
        "1/1 pass",
        "0/1 pass, 1 fail",
        "1/1 pass",
        "1/1 pass",
    )


def test_collection_errors_are_reduced_to_names(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="" name="tests.a"><error message="collection failure">'
        "tests/a.py:3: in &lt;module&gt;\n    from pkg.m import helper\n"
        "E   ImportError: cannot import name 'helper' from 'pkg.m' (/tmp/x/pkg/m.py)"
        "</error></testcase>"
        '<testcase classname="" name="tests.b"><error message="collection failure">'
        "E     secret = competitor_code(\nE   SyntaxError: invalid syntax"
        "</error></testcase>"
        '<testcase classname="tests.c" name="test_ok"/>'
        "</testsuite></testsuites>"
    )
    kinds, reasons = broken_modules(junit)
    assert kinds == {"tests.a": "import", "tests.b": "collection"}
    assert reasons == (
        "ImportError: cannot import name 'helper' from 'pkg.m'",
        "SyntaxError",
    )


@pytest.mark.e2e
def test_release_whose_files_need_more_of_it(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """Their calc.py imports a module only the release has: on our base their
    files alone do not import; their full tree says how their tests fare.
    No --sha256: the index's is trusted on first use, said once."""
    up, cfg = project
    _, sha = up.publish("1.1", recon_release_with_helper())
    result, md, _ = reconcile(Line.of(cfg), "toy==1.1")
    tofu = f"trust on first use: sha256 {sha} of toy-1.1.tar.gz as published by "
    assert capsys.readouterr().err.count(tofu) == 1
    assert any(n.startswith(f"The sdist of toy 1.1: {tofu}") for n in result.notes)
    assert "toy/helpers.py" not in result.theirs.paths  # outside our files
    cells = {r.category: r.cells for r in result.matrix.rows if r.side == "theirs"}
    keys = [r.key for r in result.runtimes]
    assert cells["FAIL_TO_PASS"][keys.index("theirs")] == "error (import)"
    assert cells["FAIL_TO_PASS"][keys.index("1.1")] == "3/3 pass"
    ours_on_theirs = result.cells[("ours", "theirs")]
    assert ours_on_theirs.broken_modules == {"tests.test_fix": "import"}
    assert "No module named 'toy.helpers'" in md.read_text()


@pytest.mark.e2e
def test_test_file_that_does_not_merge_is_skipped_not_the_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the release tree our edit of tests/test_other.py conflicts with
    theirs, but our new tests/test_fix.py still runs there."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    up = SyntheticUpstream(tmp_path / "upstream")
    up.publish("1.0", RECON_BASE)
    other = (
        RECON_BASE["tests/test_other.py"].replace(
            'assert name() == "toy"', 'assert name().startswith("toy")'
        )
        + "\n\ndef test_limit_other():\n    from toy.calc import limit\n\n"
        + ("    assert limit(3) == 3\n")
    )
    cfg = make_project(
        tmp_path / "project",
        up,
        "1.0",
        [("[Bugfix] limit reaches n", {**RECON_OURS, "tests/test_other.py": other})],
    )
    sdist, sha = up.publish("1.1", recon_release(RECON_CONFLICT))
    result, md, _ = reconcile(
        Line.of(cfg), "toy==1.1", Options(sha256=sha, sdist_url=sdist.as_uri())
    )
    ours_side = next(s for s in result.sides if s.side == "ours")
    assert ours_side.targets == (
        "tests/test_fix.py",
        "tests/test_other.py::test_limit_other",
        "tests/test_other.py::test_name",
    )
    cell = result.cells[("ours", "1.1")]
    assert cell.status == "ran" and cell.skipped_files == ("tests/test_other.py",)
    assert any(
        line.startswith("tests/test_other.py: our tests") for line in cell.conflict
    )
    details = {t: m for side, _, t, m in result.matrix.details if side == "ours"}
    col = [r.key for r in result.runtimes].index("1.1")
    assert details["tests.test_fix::test_limit_reaches_n"][col] == "pass"
    assert details["tests.test_other::test_limit_other"][col] == "conflict"
    assert "### Conflicts" in md.read_text()


@pytest.mark.e2e
def test_measured_run_exits_0_and_a_failed_run_replaces_its_report(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 0 only for a whole matrix; reports/reconcile/ is one run's output:
    a run that fails leaves FAILED.txt, not the last good report."""
    _, cfg = project
    patch = write_patch(RECON_BASE, RECON_DISJOINT, tmp_path / "greet.patch")
    argv = ["--config", str(cfg.path), "reconcile", "--resend", "off", "--with"]
    assert main([*argv, str(patch)]) == 0
    assert last_line(capsys) == (
        "[forkkit] reconcile: measured: all 10 cell(s) of the behaviour matrix"
    )
    folder = cfg.work.report_dir("reconcile")
    assert "**Measured**: all 10 cell(s)" in (folder / "reconcile.md").read_text()
    assert (folder / "junit" / "ours-on-base.xml").is_file()
    elsewhere = write_patch(
        {**RECON_BASE, "toy/calc.py": "def limit(n):\n    return n + 5\n"},
        {"toy/calc.py": "def limit(n):\n    return n\n"},
        tmp_path / "elsewhere.patch",
    )
    assert main([*argv, str(elsewhere)]) == 2
    assert "does not apply to toy 1.0" in last_line(capsys)
    assert (folder / "FAILED.txt").is_file()
    assert not (folder / "reconcile.md").exists()
    assert not (cfg.workdir / "reports" / "reconcile.md").exists()


@pytest.mark.e2e
def test_nothing_measured_exits_1(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pytest ran in every cell but selected no test: nothing was measured.
    With --out the run is published there, and only there."""
    _, cfg = project
    patch = write_patch(RECON_BASE, RECON_DISJOINT, tmp_path / "greet.patch")
    out = tmp_path / "out"
    argv = ["--config", str(cfg.path), "reconcile", "--resend", "off"]
    argv += ["--with", str(patch)]
    rc = main([*argv, "--out", str(out), "--pytest-args", "-k", "no_such_test"])
    assert rc == 1
    line = last_line(capsys)
    assert line.startswith("[forkkit] reconcile: nothing measured: ")
    assert "ours tests on base (no test result)" in line
    data = json.loads((out / "reconcile.json").read_text())
    assert data["measurement"]["verdict"] == "nothing"
    assert data["measurement"]["measured"] == []
    assert len(data["measurement"]["not_measured"]) == 10
    assert "**Nothing measured**: 0 of 10" in (out / "reconcile.md").read_text()
    assert not cfg.work.report_dir("reconcile").exists()
    # --out naming a file: one line, exit 2, the file untouched
    (tmp_path / "afile").write_text("mine\n")
    assert main([*argv, "--out", str(tmp_path / "afile")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("forkkit: error: ") and "afile" in err[-1]
    assert (tmp_path / "afile").read_text() == "mine\n"


@pytest.mark.e2e
def test_runtime_layer_that_cannot_merge_is_a_named_conflict(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Their change deletes the file our fix edits: our runtime cannot even
    merge 3-way on theirs (no conflicted file); the cell names the file, and
    the unmeasured cell makes the result partial."""
    _, cfg = project
    work = tmp_path / "moved"
    git = Git.init(work)
    write_files(work, RECON_BASE)
    git.run("add", "-A")
    git.run("commit", "-q", "-m", "base")
    git.run("rm", "-q", "toy/calc.py")
    write_files(work, {"toy/limits.py": "def limit(n):\n    return n\n"})
    git.run("add", "-A")
    patch = tmp_path / "moved.diff"
    patch.write_text(git.run("diff", "--cached").stdout)
    argv = ["--config", str(cfg.path), "reconcile", "--resend", "off"]
    assert main([*argv, "--with", str(patch)]) == 1
    assert last_line(capsys) == (
        "[forkkit] reconcile: partial: 3 of 5 cell(s) measured; not measured: "
        "ours tests on ours+theirs (conflict); ours tests on theirs+ours (conflict)"
    )
    data = json.loads((cfg.work.report_dir("reconcile") / "reconcile.json").read_text())
    cell = next(c for c in data["cells"] if c["runtime"] == "ours+theirs")
    assert cell["conflict"] == ["our runtime: toy/calc.py does not exist"]


@pytest.mark.e2e
def test_resend_that_cannot_run_is_unmeasured_and_exits_1(
    project: Project, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The resend table is part of what reconcile measures (on by default):
    a toy tree has no vLLM, so the real script fails on every column; each
    failure is a named gap, and the answers still lead the report."""
    _, cfg = project
    patch = write_patch(RECON_BASE, RECON_DISJOINT, tmp_path / "greet.patch")
    argv = ["--config", str(cfg.path), "reconcile", "--with", str(patch)]
    assert main(argv) == 1
    line = last_line(capsys)
    assert line.startswith("[forkkit] reconcile: partial: 10 of 15 cell(s) measured")
    for key in ("base", "ours", "theirs", "ours+theirs"):
        assert f"resend reproduction on {key} (" in line
    # both stacks built one tree: its failure is reused, not rerun
    assert "resend reproduction on theirs+ours (" in line
    folder = cfg.work.report_dir("reconcile")
    data = json.loads((folder / "reconcile.json").read_text())
    cells = {c["runtime"]: c for c in data["answers"]["resend"]["cells"]}
    assert cells["theirs+ours"]["reused"] == "ours+theirs"
    assert all(c["rows"] == [] and c["error"] for c in cells.values())
    assert (
        "preset `qwen3.5-0.8b`: a 16,000-token prompt"
        in (data["answers"]["resend"]["setup"])
    )
    md = (folder / "reconcile.md").read_text().splitlines()
    assert md[2] == "### Answers"
    assert md[4].startswith("- **Our approach** passes their tests: 1/2 pass (FAIL")
    assert md[5].startswith("- **Their approach** passes our tests: 0/1 pass")
    assert "- base: resend/repro-base.log: the base reproduction failed" in (
        "\n".join(md)
    )
    assert (
        md[0] == "## Reconcile: [Bugfix] limit reaches n vs greet.patch"
    )  # no local path
    assert main([*argv, "--resend", "no-such"]) == 2
    assert last_line(capsys) == (
        "forkkit: error: --resend 'no-such': unknown preset; use one of: qwen3.5-0.8b"
    )


@pytest.mark.e2e  # two whole reconciles
def test_patch_given_by_a_relative_path(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--with competitors/x.patch`` from the project folder: git applies it
    in a scratch worktree, so the path must not stay relative to the cwd."""
    _, cfg = project
    folder = tmp_path / "competitors"
    folder.mkdir()
    write_patch(RECON_BASE, RECON_DISJOINT, folder / "greet.patch")
    monkeypatch.chdir(tmp_path)
    result, md, _ = reconcile(Line.of(cfg), "competitors/greet.patch")
    assert result.theirs.runtime_paths == ("toy/other.py",)
    assert md.read_text().startswith(
        "## Reconcile: [Bugfix] limit reaches n vs greet.patch\n"
    )
    # inside the project: shown relative to it, however it was given
    inside = cfg.root / "competitors" / "greet.patch"
    inside.parent.mkdir()
    inside.write_bytes((folder / "greet.patch").read_bytes())
    _, md, _ = reconcile(Line.of(cfg), str(inside))
    head = "## Reconcile: [Bugfix] limit reaches n vs competitors/greet.patch\n"
    assert md.read_text().startswith(head)
    assert str(tmp_path) not in md.read_text().split("### Behaviour matrix")[0]


def test_the_resend_table_runs_in_the_eagle_mode_asked_for() -> None:
    """``--eagle-mode drop`` reaches the resend script and its setup line."""
    parser = argparse.ArgumentParser()
    reconcile_cli.add_arguments(parser)
    args = parser.parse_args(["--with", "x.patch", "--eagle-mode", "drop"])
    assert args.eagle_mode == "drop"
    preset = replace(preset_options("qwen3.5-0.8b"), eagle_mode=args.eagle_mode)
    assert "drop" in preset.script_args()
    assert "EAGLE mode drop" in describe_setup("qwen3.5-0.8b", preset)
    with pytest.raises(SystemExit):
        parser.parse_args(["--with", "x.patch", "--eagle-mode", "lookahead"])


def _unhashed_index(up: SyntheticUpstream) -> None:
    """Make the synthetic index publish no sha256 for any file."""
    page = up.sdist_dir / "index.json"
    data = json.loads(page.read_text())
    for entry in data["files"]:
        entry["hashes"] = {}
    page.write_text(json.dumps(data))


def _errors(capsys: pytest.CaptureFixture[str]) -> list[str]:
    err = capsys.readouterr().err.strip().splitlines()
    return [ln for ln in err if not ln.startswith("[forkkit]")]


def test_release_with_no_sha256_anywhere_is_refused_before_any_download(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trust hole: an index that publishes no sha256 and no --sha256 is
    refused in one line, like a rebase target; nothing fetched or committed."""
    up, cfg = project
    up.publish("1.1", recon_release(RECON_CONFLICT))
    _unhashed_index(up)
    argv = ["--config", str(cfg.path), "reconcile", "--resend", "off"]
    assert main([*argv, "--with", "toy==1.1"]) == 2
    assert _errors(capsys) == [
        "forkkit: error: toy-1.1.tar.gz: the index publishes no sha256; pin the "
        "file you trust with 'forkkit reconcile --with toy==1.1 --sha256 HEX'"
    ]
    cache = cfg.work.sdist_cache
    assert not cache.exists() or not list(cache.glob("toy-1.1*"))
    assert not cfg.work.reconcile_repo.exists()


def test_release_sha256_that_disagrees_with_the_index_is_refused(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    """--sha256 must agree with the index (as for a rebase target): one line,
    before anything is fetched; a good cached sdist is left alone."""
    up, cfg = project
    sdist, sha = up.publish("1.1", recon_release(RECON_CONFLICT))
    cache = cfg.work.sdist_cache
    cache.mkdir(parents=True)
    (cache / sdist.name).write_bytes(sdist.read_bytes())
    wrong = "ab" * 32
    argv = ["--config", str(cfg.path), "reconcile", "--resend", "off"]
    assert main([*argv, "--with", "toy==1.1", "--sha256", wrong]) == 2
    assert _errors(capsys) == [
        f"forkkit: error: {sdist.name}: the index says sha256 {sha}, not the "
        f"--sha256 {wrong} you pinned; check which file you trust"
    ]
    assert sorted(p.name for p in cache.iterdir()) == [sdist.name]
    assert not cfg.work.reconcile_repo.exists()
