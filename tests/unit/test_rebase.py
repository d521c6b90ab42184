"""``forkkit rebase`` on synthetic upstreams: real git, real pytest subprocesses."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from forkkit.cli import build_parser, main
from forkkit.config import ForkConfig, load_config
from forkkit.errors import ForkkitError
from forkkit.fork.seriesfiles import load_series
from forkkit.line import Line
from forkkit.output.doc import to_json
from forkkit.output.report import dump_json
from forkkit.patches.diff import split_hunks
from forkkit.patches.retired import (
    Retired,
    merge_retired,
    parse_retired,
    render_retired,
)
from forkkit.patches.testids import in_test_file
from forkkit.services.rebase.absorb import (
    conflict_regions,
    drop_fix_tables,
    patch_targets,
    repin_toml,
    semantic_verdict,
    split_runtime,
)
from forkkit.services.rebase.doc import RebaseDoc, rebase_doc
from forkkit.services.rebase.model import Options, PatchResult, RebaseResult, Target
from forkkit.services.rebase.render import render_markdown
from forkkit.services.rebase.run import rebase, resolve_target
from forkkit.testing import junit
from forkkit.testing.classify import Reason
from forkkit.testing.junit import JunitReport, Outcome
from tests.synthetic import (
    CALC_CONFLICT,
    CALC_CONFLICT_RESOLVED,
    CALC_CONTEXT_MOVED,
    CALC_FIXED_BY_DECORATOR,
    CALC_FIXED_OTHERWISE,
    CALC_REBROKEN,
    COUNT_BUGGY,
    FIX_TEST,
    FIXED_CALC,
    SyntheticUpstream,
    make_project,
    make_two_fix_project,
    toy_dependent_two_fix_changes,
    toy_release,
    toy_two_fix_changes,
)

QUICK = Options(semantic=False, red_green=False)


def snapshot(cfg: ForkConfig) -> dict[str, bytes]:
    """Every byte of patches/ and fork.toml."""
    files = {p.name: p.read_bytes() for p in sorted(cfg.patches_dir.iterdir())}
    files["fork.toml"] = cfg.path.read_bytes()
    return files


def onto(
    cfg: ForkConfig, up: SyntheticUpstream, version: str, files: dict[str, str]
) -> Target:
    up.publish(version, files)
    return resolve_target(Line.of(cfg), f"toy=={version}")


def statuses(result: RebaseResult) -> list[str]:
    return [p.status for p in result.patches]


def report_path(cfg: ForkConfig, name: str) -> Path:
    """A file of the last rebase run's published report (reports/rebase/)."""
    return cfg.workdir / "reports" / "rebase" / name


# --- pure helpers -------------------------------------------------------------


def test_repin_toml_changes_only_pin_lines() -> None:
    text = (
        '# top\n[upstream]\nname = "vllm"\nversion = "0.30.0"  # pinned\n'
        'sha256 = "aa"\n\n[fix]\nversion = "keep"\n'
    )
    out = repin_toml(
        text, {"version": "0.31.0", "sha256": "bb", "sdist_url": "u"}, ["sdist_url"]
    )
    assert out == text.replace('"0.30.0"', '"0.31.0"').replace('"aa"', '"bb"')
    # a key the file lacks (git_commit on a fork that never pinned one) is
    # added at the end of [upstream]; with no [upstream] at all it is refused
    added = repin_toml('[upstream]\nversion = "1"\n\n[patches]\n', {"git_commit": "c"})
    assert added == '[upstream]\nversion = "1"\ngit_commit = "c"\n\n[patches]\n'
    fix = '[upstream]\nversion = "1"\n[[fix]]\nversion = "keep"\n'
    assert repin_toml(fix, {"version": "2"}) == fix.replace('"1"', '"2"', 1)
    with pytest.raises(ForkkitError, match="no \\[upstream\\] table"):
        repin_toml('[patches]\ndir = "p"\n', {"sha256": "x"})


def test_split_runtime_and_targets() -> None:
    files = ["vllm/a.py", "tests/v1/test_a.py", "tests/v1/conftest.py"]
    assert split_runtime(files, []) == (["vllm/a.py"], files[1:])
    focused = ["tests/v1/test_a.py::test_x", "tests/v1/test_b.py"]
    assert patch_targets(focused, files) == ["tests/v1/test_a.py::test_x"]
    assert patch_targets([], files) == ["tests/v1/test_a.py"]


def test_split_hunks_and_conflict_regions(toy_project: ForkConfig) -> None:
    series = load_series(toy_project.series_file, toy_project.patches_dir)
    hunks = split_hunks(series.patches[0].path.read_text())
    assert [(h.path, h.index, h.count) for h in hunks] == [
        ("tests/test_fix.py", 1, 1),
        ("toy/calc.py", 1, 1),
    ]
    assert all(h.text.startswith("diff --git") for h in hunks)
    text = "a\n<<<<<<< HEAD\nx\n=======\ny\n>>>>>>> c\nb\n"
    assert conflict_regions(text) == [(2, 6)]


def test_semantic_verdict() -> None:
    def report(outcomes: dict[str, Outcome]) -> JunitReport:
        ids = {f"tests.test_{k}": v for k, v in outcomes.items()}
        return JunitReport(
            {t: junit.TestOutcome(t, v, 0.0, "AssertionError") for t, v in ids.items()}
        )

    f2p = ["tests.test_a::x", "tests.test_b::y"]
    red = report({"a::x": "passed", "b::y": "passed", "a::z": "failed"})
    ok = semantic_verdict(["tests/test_a.py"], f2p, red, reason=Reason())
    assert ok.absorbed and ok.others_failing == ("tests.test_a::z",)
    assert "may need refreshing" in ok.note
    half = semantic_verdict(
        [], f2p, report({"a::x": "passed", "b::y": "failed"}), reason=Reason()
    )
    assert not half.absorbed and half.failed == ("tests.test_b::y",)
    crash = report({"a::x": "passed", "b::y": "error"})
    crash.tests["tests.test_b::y"] = junit.TestOutcome(
        "tests.test_b::y", "error", 0, "KeyError"
    )
    broken = semantic_verdict([], f2p, crash, reason=Reason())
    assert not broken.absorbed and broken.broken == ("tests.test_b::y",)
    assert "cannot run there (KeyError)" in broken.note
    part = semantic_verdict(
        [],
        f2p,
        report({"a::x": "passed"}),
        reason=Reason(),
        conflicted_files=["tests/test_b.py"],
    )
    assert not part.absorbed and part.unchecked == ("tests.test_b::y",)
    assert in_test_file("tests.v1.test_c.TestK::t", "tests/v1/test_c.py")


# --- rebase scenarios ---------------------------------------------------------


def test_clean_rebase_writes_only_with_apply(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    target = onto(
        toy_project, toy_upstream, "1.1", toy_release({"toy/extra.py": "X = 1\n"})
    )
    assert "trust on first use" in target.trust
    before = snapshot(toy_project)
    dry = rebase(Line.of(toy_project), target, QUICK)
    assert statuses(dry) == ["clean"] and dry.ok and not dry.written
    assert snapshot(toy_project) == before
    assert "1:" in dry.range_diff and " = " in dry.range_diff
    out = Path(dry.out_dir)
    assert (out / "patches" / "series").read_text().strip() == dry.new_series[0]
    assert 'version = "1.1"' in (out / "fork.toml").read_text()

    unproven = Options(apply=True, apply_unproven=True, semantic=False, red_green=False)
    done = rebase(Line.of(toy_project), target, unproven)
    assert done.written and done.unproven
    cfg = load_config(toy_project.path)
    assert cfg.upstream.release.version == "1.1"
    assert cfg.upstream.release.sha256 == toy_upstream.sha256("1.1")
    assert cfg.upstream.release.sdist_url.endswith("toy-1.1.tar.gz")
    # only the pin lines changed
    old = before["fork.toml"].decode().splitlines()
    new = toy_project.path.read_text().splitlines()
    changed = [a for a, b in zip(old, new, strict=True) if a != b]
    assert [c.split(" =")[0] for c in changed] == ["version", "sha256", "sdist_url"]


def test_three_way_rebase(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    target = onto(
        toy_project,
        toy_upstream,
        "1.1",
        toy_release({"toy/calc.py": CALC_CONTEXT_MOVED}),
    )
    result = rebase(Line.of(toy_project), target, QUICK)
    assert statuses(result) == ["3way"]
    assert "hunk 1/1 of toy/calc.py" in result.patches[0].detail
    patch = (Path(result.out_dir) / "patches" / result.new_series[0]).read_text()
    assert "def double(n: int) -> int:" in patch  # refreshed context
    assert " ! " in result.range_diff  # the patch changed (context moved)


@pytest.mark.e2e
@pytest.mark.parametrize("parallel", ["on", "off"])
def test_the_proof_runs_side_by_side_as_asked(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, parallel: str
) -> None:
    """The rebase's proof is the red-green proof, packed as ``--parallel``
    says (``auto``: when two cores are free as it starts)."""
    calc = {"toy/calc.py": CALC_CONTEXT_MOVED}
    target = onto(toy_project, toy_upstream, "1.1", toy_release(calc))
    opts = Options(related=False, semantic=False, parallel=parallel)
    result = rebase(Line.of(toy_project), target, opts)
    assert result.proof_valid is True and result.proof is not None
    assert result.proof.parallel is (parallel == "on")


@pytest.mark.parametrize("command", [["rebase", "--onto", "toy==1.1"], ["watch"]])
@pytest.mark.parametrize(
    ("given", "want"),
    [([], "auto"), (["--parallel"], "on"), (["--parallel", "off"], "off")],
)
def test_parallel_reaches_the_proof_options(
    command: list[str], given: list[str], want: str
) -> None:
    parser, handlers = build_parser()
    args = parser.parse_args([*command, *given])
    req = handlers[command[0]].request(args)
    assert req.opts.parallel == want


@pytest.mark.e2e
def test_conflict_keeps_everything_and_rerere_replays(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    target = onto(
        toy_project, toy_upstream, "1.1", toy_release({"toy/calc.py": CALC_CONFLICT})
    )
    before = snapshot(toy_project)
    args = ["rebase", "--onto", "toy==1.1", "--apply", "--no-red-green"]
    assert main(["--config", str(toy_project.path), *args]) == 1
    err = capsys.readouterr().err
    assert "CONFLICT 0001-Bugfix-limit-reaches-n.patch: toy/calc.py (lines 2-6)" in err
    assert "hunk 1/1 of toy/calc.py" in err
    assert snapshot(toy_project) == before
    report = json.loads(report_path(toy_project, "rebase.json").read_text())
    assert (report["schema"], report["version"]) == ("forkkit.rebase", 1)
    assert report["outcome"] == "conflict" and not report["written"]

    opts = Options(apply=True, apply_unproven=True, red_green=False)
    first = rebase(Line.of(toy_project), target, opts)  # the same conflict again
    assert statuses(first) == ["conflict"] and first.outcome == "conflict"
    assert not first.written and snapshot(toy_project) == before
    (conflict,) = first.patches[0].conflicts
    assert conflict.path == "toy/calc.py" and conflict.regions
    assert conflict.hunks == ("hunk 1/1 of toy/calc.py (@@ -1,5 +1,5 @@)",)
    worktree = Path(first.repo) / "toy" / "calc.py"
    assert "<<<<<<<" in worktree.read_text()
    # its test still fails on the new upstream without the fix: not absorbed
    sem = first.patches[0].semantic
    assert sem is not None and not sem.absorbed and sem.failed

    # Resolve by hand (no git add/commit), then retry: rerere records and replays.
    worktree.write_text(CALC_CONFLICT_RESOLVED)
    second = rebase(Line.of(toy_project), target, opts)
    assert statuses(second) == ["rerere"] and second.written
    assert any("recorded 1 resolution" in n for n in second.notes)
    assert "return n\n" in (toy_project.patches_dir / second.new_series[0]).read_text()
    assert list((Path(first.repo) / ".git" / "rr-cache").iterdir())

    # The recorded resolution persists: a fresh rebase of the old series replays it.
    (toy_project.path).write_bytes(before["fork.toml"])
    for name, data in before.items():
        if name != "fork.toml":
            (toy_project.patches_dir / name).write_bytes(data)
    for p in toy_project.patches_dir.glob("*.patch"):
        if p.name not in before:
            p.unlink()
    third = rebase(Line.of(toy_project), target, QUICK)
    assert statuses(third) == ["rerere"]


@pytest.mark.e2e
def test_a_resolution_that_also_edits_a_clean_file_is_replayed_whole(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    """rerere keeps only conflicted hunks; an edit the resolution needs in a
    file that merged cleanly (a test refreshed for a renamed API) is kept too."""
    target = onto(
        toy_project, toy_upstream, "1.1", toy_release({"toy/calc.py": CALC_CONFLICT})
    )
    opts = Options(red_green=False)  # dry runs: the series goes to rebase/out
    first = rebase(Line.of(toy_project), target, opts)
    assert statuses(first) == ["conflict"]
    repo = Path(first.repo)
    (repo / "toy" / "calc.py").write_text(CALC_CONFLICT_RESOLVED)
    test = repo / "tests" / "test_fix.py"
    refreshed = test.read_text() + "\n\ndef test_refreshed_for_the_new_upstream():\n"
    refreshed += "    assert limit(3) == 3\n"
    test.write_text(refreshed)

    for run in (1, 2):  # recorded once, then replayed from the record alone
        again = rebase(Line.of(toy_project), target, opts)
        assert statuses(again) == ["rerere"], run
        out = Path(again.out_dir) / "patches" / again.new_series[0]
        patch = out.read_text()
        assert "+def test_refreshed_for_the_new_upstream():" in patch, run
        assert "return n\n" in patch


@pytest.mark.parametrize(
    ("calc", "detail"),
    [
        (FIXED_CALC, "patch-id"),  # upstream took exactly our change
        (FIXED_CALC + "\n\ndef triple(n):\n    return 3 * n\n", "reverse-applies"),
        # the same change in moved context: the 3-way result is empty
        (CALC_CONTEXT_MOVED.replace("return n - 1", "return n"), "changes nothing"),
    ],
)
def test_textual_absorption(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    calc: str,
    detail: str,
) -> None:
    files = toy_release({"toy/calc.py": calc, "tests/test_fix.py": FIX_TEST})
    target = onto(toy_project, toy_upstream, "1.1", files)
    (old,) = load_series(toy_project.series_file, toy_project.patches_dir).patches
    digest = hashlib.sha256(old.path.read_bytes()).hexdigest()
    result = rebase(Line.of(toy_project), target, Options(apply=True, red_green=True))
    assert statuses(result) == ["absorbed-textual"]
    assert detail in result.patches[0].detail
    assert result.can_retire and result.outcome == "retire" and result.written
    assert load_series(toy_project.series_file, toy_project.patches_dir).patches == ()
    # where it went: patches/retired.toml, written with the series
    record = toy_project.patches_dir / "retired.toml"
    (entry,) = parse_retired(record.read_text())
    assert (entry.name, entry.applied_upstream, entry.retired_from) == (
        old.name,
        "toy 1.1",
        "toy 1.0",
    )
    assert entry.how == "absorbed-textual" and detail in entry.evidence
    assert entry.sha256 == digest
    assert result.retired == (entry,)
    # pr-body reads the report with the producer's types
    written = rebase_doc(result)
    doc = RebaseDoc.of(json.loads(dump_json(written.document())), where="rebase.json")
    assert doc == written  # the one type reads back what it wrote
    assert (doc.old, doc.new, doc.can_retire, doc.written, doc.retired) == (
        "toy 1.0",
        "toy 1.1",
        True,
        True,
        (entry,),
    )


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("calc", "how"),
    [(CALC_FIXED_BY_DECORATOR, "applies (3way)"), (CALC_FIXED_OTHERWISE, "conflicts")],
)
def test_semantic_absorption(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, calc: str, how: str
) -> None:
    target = onto(toy_project, toy_upstream, "1.1", toy_release({"toy/calc.py": calc}))
    before = snapshot(toy_project)
    result = rebase(Line.of(toy_project), target, Options(red_green=False))
    (p,) = result.patches
    assert p.status == "absorbed-semantic" and how in p.detail
    assert p.semantic is not None and p.semantic.absorbed
    assert p.semantic.fail_to_pass == ("tests.test_fix::test_limit_reaches_n",)
    assert result.can_retire and result.new_series == ()
    assert snapshot(toy_project) == before  # dry run
    # the dry run shows the record it would write, beside the refreshed series
    out = Path(result.out_dir) / "patches" / "retired.toml"
    (entry,) = parse_retired(out.read_text())
    assert entry.how == "absorbed-semantic" and "FAIL_TO_PASS" in entry.evidence
    assert "## Retired: absorbed upstream" in render_markdown(result)
    # Without the test-based check the over-correcting patch would be carried.
    if how.startswith("applies"):
        assert statuses(rebase(Line.of(toy_project), target, QUICK)) == ["3way"]


@pytest.mark.e2e
def test_no_red_failure_skips_the_old_green_run(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    """When none of the patch's tests fails red on the old base (here ``-k``
    selects none), no test can be FAIL_TO_PASS: green is not run for it."""
    calc = {"toy/calc.py": CALC_FIXED_BY_DECORATOR}
    target = onto(toy_project, toy_upstream, "1.1", toy_release(calc))
    opts = Options(red_green=False, pytest_args=("-k", "no_such_test"))
    (p,) = rebase(Line.of(toy_project), target, opts).patches
    assert p.semantic is not None
    assert p.semantic.note == "not applicable: no FAIL_TO_PASS test on the old base"
    runs = {f.name for f in toy_project.work.rebase_dir("runs").iterdir()}
    assert any(n.endswith("-old-red.xml") for n in runs), runs
    assert not any("-old-green" in n for n in runs), runs


def test_a_kept_tests_only_series_whose_guard_fails_is_not_a_retirement() -> None:
    """Every patch absorbed, but the tests kept with ``--keep-tests`` fail on
    the new pin: the outcome is the failed proof (exit 1), not ``retire``."""
    absorbed = PatchResult(name="0001-x.patch", subject="x", status="absorbed-semantic")
    result = RebaseResult(
        old_label="toy 1.0",
        new_label="toy 1.1",
        new_pin={},
        trust="index",
        patches=(absorbed,),
        repo="repo",
        new_series=("0001-Tests-x.patch",),
    )
    assert result.outcome == "retire"  # not proven yet (--no-red-green)
    failed = dataclasses.replace(result, proof_valid=False)
    assert failed.outcome == "proof-failed" and not failed.ok
    assert dataclasses.replace(result, proof_valid=True).outcome == "retire"


@pytest.mark.e2e
def test_keep_tests_retires_the_fix_and_guards_with_its_tests(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    """``--keep-tests``: upstream fixed it otherwise; the runtime change
    retires, its tests stay as a tests-only series whose red/green is a guard
    (the tests pass on the new pin; there is nothing to revert)."""
    calc = {"toy/calc.py": CALC_FIXED_OTHERWISE}
    target = onto(toy_project, toy_upstream, "1.1", toy_release(calc))
    opts = Options(apply=True, keep_tests=True, related=False)
    result = rebase(Line.of(toy_project), target, opts)
    assert statuses(result) == ["absorbed-semantic"] and result.outcome == "retire"
    assert result.proof_valid is True and result.written, result.notes
    assert result.proof is not None and result.proof.mode == "guard"
    (patch,) = load_series(toy_project.series_file, toy_project.patches_dir).patches
    assert patch.subject.startswith("[Tests] ")
    (entry,) = parse_retired((toy_project.patches_dir / "retired.toml").read_text())
    assert entry.evidence.endswith("stay in the series as a tests-only patch")
    assert 'version = "1.1"' in toy_project.path.read_text()
    # a plain red-green on the re-pinned fork is the same guard, and valid
    cfg = load_config(toy_project.path)
    assert main(["--config", str(cfg.path), "red-green", "--no-related"]) == 0
    folder = cfg.workdir / "reports" / "red_green" / "toy-fix"
    md = (folder / "red_green.md").read_text()
    assert "✅ **valid**: 1 carried test(s) pass on toy 1.1" in md
    assert "FAIL_TO_PASS" not in md and "# red:" not in md
    # a later test commit of the fix keeps it a guard; a runtime change makes
    # it a red/green again, one no test of the fix needs: invalid
    for path, valid in (("tests/test_more.py", True), ("toy/extra.py", False)):
        assert main(["--config", str(cfg.path), "materialize"]) == 0
        tree = cfg.work.fork
        (tree / path).write_text("def test_more():\n    assert True\n")
        git = ["git", "-C", str(tree)]
        subprocess.run([*git, "add", "-A"], check=True)
        message = f"add {path}\n\nForkkit-Fix: toy-fix"
        subprocess.run([*git, "commit", "-qm", message], check=True)
        assert main(["--config", str(cfg.path), "export"]) == 0
        rc = main(["--config", str(cfg.path), "red-green", "--no-related"])
        assert rc == (0 if valid else 1), path
        data = json.loads((folder / "red_green.json").read_text())
        assert data["mode"] == ("guard" if valid else "red-green")


@pytest.mark.e2e
@pytest.mark.parametrize("dependent", [False, True])
def test_two_patches_one_absorbed_one_carried_with_proof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dependent: bool
) -> None:
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", sys.executable)
    up = SyntheticUpstream(tmp_path / "up")
    up.publish("1.0", toy_release({"toy/count.py": COUNT_BUGGY}))
    changes = toy_dependent_two_fix_changes() if dependent else toy_two_fix_changes()
    cfg = make_project(
        tmp_path / "project",
        up,
        "1.0",
        changes,
        fix_ids=["limit", "count"],
    )
    fixed = {"toy/count.py": COUNT_BUGGY, "toy/calc.py": CALC_FIXED_OTHERWISE}
    target = onto(cfg, up, "1.1", toy_release(fixed))
    result = rebase(Line.of(cfg), target, Options(apply=True, related=False))
    assert statuses(result) == ["absorbed-semantic", "clean"]
    assert [p.name for p in result.carried] == [result.patches[1].name]
    assert not result.can_retire and result.proof_valid is True and result.written
    # per fix: the worst of its patches
    assert [(f.fix, f.verdict) for f in result.fixes] == [
        ("limit", "absorbed"),
        ("count", "carried"),
    ]
    assert "| `limit` | absorbed |" in render_markdown(result)
    subjects = [
        p.subject for p in load_series(cfg.series_file, cfg.patches_dir).patches
    ]
    if dependent:
        # the count patch edits the limit patch's test file: those tests stay
        assert "tests-only patch" in result.patches[0].detail
        (record,) = parse_retired((cfg.patches_dir / "retired.toml").read_text())
        assert record.name == result.patches[0].name
        assert record.evidence.endswith("stay in the series as a tests-only patch")
        assert subjects == [
            "[Tests] [Bugfix] limit reaches n",
            "[Bugfix] count counts every item",
        ]
        assert "> 1:" in result.range_diff and "[Tests]" in result.range_diff
    else:
        assert subjects == ["[Bugfix] count counts every item"]
    data = to_json(rebase_doc(result))
    assert data["absorbed"] == [result.patches[0].name] and data["ok"]
    # the retirement is per fix and true: limit's record names its fix, and
    # a proof right after it is valid, nothing in fork.toml gone stale
    (record,) = parse_retired((cfg.patches_dir / "retired.toml").read_text())
    assert (record.fix, record.applied_upstream) == ("limit", "toy 1.1")
    after = load_config(cfg.path)
    kept = ["limit", "count"] if dependent else ["count"]
    assert [d.id for d in after.fixes] == kept
    argv = ["--config", str(cfg.path), "red-green", "--no-related"]
    assert main(argv) == 0
    folder = after.work.report_dir("red_green")
    summary = json.loads((folder / "summary.json").read_text())
    modes = {row["fix"]: (row["mode"], row["valid"]) for row in summary["fixes"]}
    assert modes["count"] == ("red-green", True)
    if dependent:  # limit's tests stay: a guard of upstream's fix
        assert modes["limit"] == ("guard", True)


@pytest.mark.e2e
def test_failed_proof_writes_nothing(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    target = onto(
        toy_project, toy_upstream, "1.1", toy_release({"toy/calc.py": CALC_REBROKEN})
    )
    before = snapshot(toy_project)
    result = rebase(Line.of(toy_project), target, Options(apply=True, related=False))
    assert statuses(result) == ["clean"]
    assert result.proof_valid is False and result.outcome == "proof-failed"
    assert not result.written and snapshot(toy_project) == before


@pytest.mark.e2e
def test_cli_git_rev_and_reports(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    toy_upstream.publish("1.1", toy_release({"toy/calc.py": CALC_CONTEXT_MOVED}))
    args = [
        "rebase",
        "--onto-rev",
        "v1.1",
        "--no-semantic",
        "--focused-only",
        "--apply",
    ]
    rc = main(["--config", str(toy_project.path), *args])
    assert rc == 0
    assert "3way" in capsys.readouterr().out
    cfg = load_config(toy_project.path)
    # the followed revision stays a name; the commit it was at is the pin
    git = cfg.upstream.commit_pin
    assert cfg.upstream.source == "git" and git.rev == "v1.1"
    assert git.commit == toy_upstream.rev("1.1")
    data = json.loads(report_path(toy_project, "rebase.json").read_text())
    assert data["outcome"] == "rebased" and data["proof_valid"] is True
    assert not data["unproven"]
    md = report_path(toy_project, "rebase.md").read_text()
    assert "applied with a 3-way merge" in md and "Range-diff" in md
    assert report_path(toy_project, "red-green").is_dir()  # the proof, in the run


# --- issue 11: what --apply may write -----------------------------------------

NO_PROOF = ["--no-semantic", "--no-red-green"]


def run_cli(cfg: ForkConfig, *args: str) -> int:
    return main(["--config", str(cfg.path), "rebase", "--onto", "toy==1.1", *args])


def test_apply_refuses_an_unproven_result(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    toy_upstream.publish("1.1", toy_release({"toy/extra.py": "X = 1\n"}))
    before = snapshot(toy_project)
    assert run_cli(toy_project, "--apply", *NO_PROOF) == 1
    assert snapshot(toy_project) == before
    assert "rerun without --no-red-green, or as 'forkkit rebase --apply-unproven" in (
        capsys.readouterr().err
    )
    data = json.loads(report_path(toy_project, "rebase.json").read_text())
    assert data["unproven"] and not data["written"] and data["outcome"] == "rebased"
    assert "**unproven**" in report_path(toy_project, "rebase.md").read_text()


def test_apply_unproven_writes_and_the_report_says_unproven(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    toy_upstream.publish("1.1", toy_release({"toy/extra.py": "X = 1\n"}))
    assert run_cli(toy_project, "--apply-unproven", *NO_PROOF) == 0
    assert load_config(toy_project.path).upstream.release.version == "1.1"
    data = json.loads(report_path(toy_project, "rebase.json").read_text())
    assert data["unproven"] and data["written"]
    md = report_path(toy_project, "rebase.md").read_text()
    assert "Proof: **unproven**" in md and "Not run: unproven." in md


def _two_fix_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ForkConfig:
    """Two patches; toy 1.1 takes the limit fix (absorbed), count stays carried."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", sys.executable)
    up = SyntheticUpstream(tmp_path / "up")
    cfg = make_two_fix_project(tmp_path / "project", up, "1.0")
    fixed = {"toy/count.py": COUNT_BUGGY, "toy/calc.py": FIXED_CALC}
    up.publish("1.1", toy_release({**fixed, "tests/test_fix.py": FIX_TEST}))
    return cfg


LIMIT = "0001-Bugfix-limit-reaches-n.patch"
COUNT = "0002-Bugfix-count-counts-every-item.patch"
NEW_COUNT = "0001-Bugfix-count-counts-every-item.patch"
PROVEN = ["--no-semantic", "--focused-only"]


@pytest.mark.e2e
def test_apply_keeps_comments_and_files_it_did_not_write(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = _two_fix_project(tmp_path, monkeypatch)
    cfg.series_file.write_text(
        f"# carried fixes\n# the limit fix\n{LIMIT}\n\n# the count fix\n"
        f"{COUNT}  # until toy 2.0\n"
    )
    draft = cfg.patches_dir / "0003-draft-idea.patch"
    draft.write_bytes((cfg.patches_dir / COUNT).read_bytes() + b"\n# my draft\n")
    draft_bytes = draft.read_bytes()
    notes = cfg.patches_dir / "NOTES.txt"
    notes.write_text("not a patch\n")
    assert run_cli(cfg, "--apply", *PROVEN) == 0
    assert draft.read_bytes() == draft_bytes and notes.read_text() == "not a patch\n"
    assert sorted(p.name for p in cfg.patches_dir.glob("*.patch")) == [
        NEW_COUNT,
        draft.name,
    ]
    assert cfg.series_file.read_text() == (
        "# carried fixes\n# the limit fix\n\n# the count fix\n"
        f"{NEW_COUNT}  # until toy 2.0\n"
    )
    assert f"left alone: {draft}" in capsys.readouterr().err
    data = json.loads(report_path(cfg, "rebase.json").read_text())
    assert data["written"] and any(draft.name in n for n in data["notes"])
    assert draft.name in report_path(cfg, "rebase.md").read_text()


@pytest.mark.e2e
def test_apply_never_overwrites_a_file_it_did_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = _two_fix_project(tmp_path, monkeypatch)
    stranger = cfg.patches_dir / NEW_COUNT  # not in the series, same name
    stranger.write_text("my notes, not a patch\n")
    before = snapshot(cfg)
    with pytest.raises(ForkkitError, match="not in the series"):
        opts = Options(apply=True, semantic=False, related=False)
        rebase(Line.of(cfg), resolve_target(Line.of(cfg), "toy==1.1"), opts)
    assert snapshot(cfg) == before


def test_apply_writes_only_bytes_that_rebuild_the_tree(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The refreshed patches change between export and --apply (here: during
    the proof): the check runs on the bytes written, so nothing is written."""
    import forkkit.services.rebase.run

    target = onto(
        toy_project, toy_upstream, "1.1", toy_release({"toy/extra.py": "X = 1\n"})
    )
    out = toy_project.workdir / "rebase" / "out" / "patches"

    def tampering_proof(*args: object, **kwargs: object) -> tuple[None, str, bool]:
        for patch in out.glob("*.patch"):
            text = patch.read_text().replace("+    return n\n", "+    return n + 1\n")
            patch.write_text(text)
        return None, "", True

    monkeypatch.setattr(forkkit.services.rebase.run, "_prove", tampering_proof)
    before = snapshot(toy_project)
    with pytest.raises(ForkkitError, match="nothing written"):
        rebase(Line.of(toy_project), target, Options(apply=True, semantic=False))
    assert snapshot(toy_project) == before


def test_reports_hold_one_run(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    toy_upstream.publish("1.1", toy_release({"toy/extra.py": "X = 1\n"}))
    assert run_cli(toy_project, *NO_PROOF) == 0
    folder = report_path(toy_project, "")
    assert json.loads((folder / "rebase.json").read_text())["outcome"] == "rebased"
    args = ["--config", str(toy_project.path), "rebase", "--onto", "toy==9.9"]
    assert main(args) == 2  # no such release: the run fails
    assert sorted(p.name for p in folder.iterdir()) == ["FAILED.txt"]
    assert "toy==9.9" in (folder / "FAILED.txt").read_text()


def test_a_lock_left_by_a_killed_git_does_not_block_the_next_run(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    target = onto(toy_project, toy_upstream, "1.1", toy_release({"toy/x.py": ""}))
    assert statuses(rebase(Line.of(toy_project), target, QUICK)) == ["clean"]
    lock = toy_project.workdir / "rebase" / "repo" / ".git" / "index.lock"
    lock.write_text("")  # git was killed with forkkit (kill -9 of the group)
    assert statuses(rebase(Line.of(toy_project), target, QUICK)) == ["clean"]
    assert not lock.exists()


# --- issue 12: one result cache -------------------------------------------------


@pytest.mark.e2e
def test_a_changed_deselect_is_not_served_from_the_result_cache(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The semantic check's pytest runs are cached by the one result cache,
    whose key holds fork.toml's ``deselect``: changing it runs them again."""
    calc = toy_release({"toy/calc.py": CALC_FIXED_BY_DECORATOR})
    target = onto(toy_project, toy_upstream, "1.1", calc)
    opts = Options(red_green=False)
    assert statuses(rebase(Line.of(toy_project), target, opts)) == ["absorbed-semantic"]
    capsys.readouterr()
    assert statuses(rebase(Line.of(toy_project), target, opts)) == ["absorbed-semantic"]
    assert "cached" in capsys.readouterr().err  # same tree, env, args: reused
    text = toy_project.path.read_text()
    deselect = '[testenv]\ndeselect = ["tests/test_calc.py::test_nothing"]\n'
    toy_project.path.write_text(text.replace("[testenv]\n", deselect))
    cfg = load_config(toy_project.path)
    assert cfg.testenv.deselect == ("tests/test_calc.py::test_nothing",)
    assert statuses(rebase(Line.of(cfg), target, opts)) == ["absorbed-semantic"]
    assert "cached" not in capsys.readouterr().err


def test_the_sha256_comes_from_the_index_or_the_pin_never_the_file(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    path, sha = toy_upstream.publish("1.1", toy_release({"toy/x.py": ""}))
    page = toy_upstream.sdist_dir / "index.json"
    data = json.loads(page.read_text())
    assert resolve_target(Line.of(toy_project), "toy==1.1").pin["sha256"] == sha
    for entry in data["files"]:
        entry["hashes"] = {}  # an index that publishes no hash
    page.write_text(json.dumps(data))
    with pytest.raises(ForkkitError, match="publishes no sha256"):
        resolve_target(Line.of(toy_project), "toy==1.1")
    pinned = resolve_target(Line.of(toy_project), "toy==1.1", sha256="ab" * 32)
    assert pinned.pin["sha256"] == "ab" * 32 and "--sha256" in pinned.trust
    page.unlink()  # a bare folder of sdists is no index to resolve against
    with pytest.raises(ForkkitError, match="cannot read the package index"):
        resolve_target(Line.of(toy_project), "toy==1.1")
    assert path.is_file()


# --- patches/retired.toml -------------------------------------------------------


def test_retired_records_round_trip_and_merge() -> None:
    one = Retired(
        name="0001-a.patch",
        subject='[Bugfix] "quoted" \\ subject',
        applied_upstream="vllm 0.34.0",
        how="absorbed-semantic",
        evidence="all 10 FAIL_TO_PASS tests pass\non vllm 0.34.0 without it",
        retired_from="vllm 0.30.0",
        sha256="ab" * 32,
    )
    two = Retired(
        **{
            **one.__dict__,
            "name": "0002-b.patch",
            "how": "absorbed-textual",
            "tests": ("tests/a.py::test_x", 'tests/b.py::test_y[a"b]'),
        }
    )
    text = render_retired([one, two])
    assert text.count("tests = ") == 1  # none recorded: no line
    assert text.startswith("# Patches that left the series")
    assert parse_retired(text) == (one, two)
    again = Retired(**{**one.__dict__, "applied_upstream": "vllm 0.35.0"})
    assert merge_retired((one, two), (again,)) == (two, again)
    with pytest.raises(ForkkitError) as err:
        parse_retired("[[retired]\nname = 1", where="patches/retired.toml")
    assert str(err.value).startswith("patches/retired.toml: not a list of retired")
    assert "\n" not in str(err.value)


def test_a_retired_fix_leaves_fork_toml_whole() -> None:
    """Only the retired fix's table goes (its comments with it); the next
    table keeps its own comments; any quoting and header spacing."""
    toml = (
        '[upstream]\nname = "t"\n\n'
        "# the limit fix\n[[fix]]  # carried since 1.0\nid = 'limit'\n"
        'related_suites = ["tests"]\n\n'
        '# the count fix\n[[ fix ]]\nid = "count"\n\n'
        '# the environment\n[testenv]\ntorch = "x"\n'
    )
    new = drop_fix_tables(toml, ["limit"])
    assert new == (
        '[upstream]\nname = "t"\n\n'
        '# the count fix\n[[ fix ]]\nid = "count"\n\n'
        '# the environment\n[testenv]\ntorch = "x"\n'
    )
    last = drop_fix_tables(new, ["count"])
    assert (
        last == '[upstream]\nname = "t"\n\n# the environment\n[testenv]\ntorch = "x"\n'
    )


@pytest.mark.e2e
@pytest.mark.parametrize(
    "mark", ["@pytest.mark.skip(reason='x')", "@pytest.mark.xfail(reason='x')"]
)
def test_a_guard_refuses_a_carried_test_that_only_skips_or_xfails(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, mark: str
) -> None:
    """The guard is exact (#33 item 6): a carried test turned into a skip or
    an xfail (commit + export) does not pass, so the guard is not valid."""
    calc = {"toy/calc.py": CALC_FIXED_OTHERWISE}
    target = onto(toy_project, toy_upstream, "1.1", toy_release(calc))
    rebase(
        Line.of(toy_project),
        target,
        Options(apply=True, keep_tests=True, related=False),
    )
    cfg = load_config(toy_project.path)
    assert main(["--config", str(cfg.path), "materialize"]) == 0
    test = cfg.work.fork / "tests" / "test_fix.py"
    text = test.read_text().replace("def test_limit", f"{mark}\ndef test_limit")
    test.write_text("import pytest\n" + text)
    git = ["git", "-C", str(cfg.work.fork)]
    subprocess.run(
        [*git, "commit", "-qam", "mark it\n\nForkkit-Fix: toy-fix"], check=True
    )
    assert main(["--config", str(cfg.path), "export"]) == 0
    assert main(["--config", str(cfg.path), "red-green", "--no-related"]) == 1
    md = (
        cfg.workdir / "reports" / "red_green" / "toy-fix" / "red_green.md"
    ).read_text()
    assert "1 carried test(s) are skipped or xfailed on toy 1.1" in md


@pytest.mark.e2e
@pytest.mark.parametrize("change", ["delete", "rename"])
def test_a_guard_names_a_recorded_carried_test_that_did_not_run(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, change: str
) -> None:
    """The guard is exact (#33 item 6): the retirement records the fix's
    FAIL_TO_PASS tests, so a carried test deleted (or renamed) by a later
    commit of the fix is named, not silently one test fewer."""
    calc = {"toy/calc.py": CALC_FIXED_OTHERWISE}
    target = onto(toy_project, toy_upstream, "1.1", toy_release(calc))
    rebase(
        Line.of(toy_project),
        target,
        Options(apply=True, keep_tests=True, related=False),
    )
    cfg = load_config(toy_project.path)
    (entry,) = parse_retired((cfg.patches_dir / "retired.toml").read_text())
    assert entry.tests == ("tests/test_fix.py::test_limit_reaches_n",)
    assert main(["--config", str(cfg.path), "materialize"]) == 0
    test = cfg.work.fork / "tests" / "test_fix.py"
    renamed = test.read_text().replace("def test_limit_reaches_n", "def test_renamed")
    deleted = "def test_kept():\n    assert True\n"
    test.write_text(deleted if change == "delete" else renamed)
    git = ["git", "-C", str(cfg.work.fork)]
    subprocess.run(
        [*git, "commit", "-qam", f"{change} it\n\nForkkit-Fix: toy-fix"], check=True
    )
    assert main(["--config", str(cfg.path), "export"]) == 0
    assert main(["--config", str(cfg.path), "red-green", "--no-related"]) == 1
    md = (
        cfg.workdir / "reports" / "red_green" / "toy-fix" / "red_green.md"
    ).read_text()
    assert (
        "1 carried test(s) recorded in patches/retired.toml did not run (deleted "
        "or renamed), e.g. tests/test_fix.py::test_limit_reaches_n" in md
    )
