"""Red/green proofs on synthetic forks: real git, real pytest subprocesses."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.fork.tree import ForkTree, materialize
from forkkit.line import Line
from forkkit.patches.testids import node_id
from forkkit.services.proof.model import related_verdict, untested_changes
from forkkit.services.proof.render import render_markdown
from forkkit.services.proof.run import prove, resolve_parallel
from forkkit.testing import env as testenv
from forkkit.testing import junit
from forkkit.testing.classify import classify
from forkkit.testing.forkruns import ForkRuns
from forkkit.vcs import Repo, scratch_root
from tests.synthetic import (
    BUGGY,
    FIX_TEST,
    FIXED_CALC,
    SyntheticUpstream,
    dead_pid,
    make_project,
    toy_breaking_fix_changes,
    toy_import_fix_changes,
    toy_slow_red_changes,
)

FIX_ID = "tests.test_fix::test_limit_reaches_n"
SRC = str(Path(__file__).parents[2] / "src")
PASS_MARK = {testenv.PASS_ENV: "TOY_MARK"}  # the slow red's mark reaches its run


def worktrees(repo: Repo) -> int:
    """How many work trees the repository has (itself included)."""
    admin = repo.git_dir() / "worktrees"
    return 1 + (len(list(admin.iterdir())) if admin.is_dir() else 0)


def assert_fork_intact(tree: ForkTree) -> None:
    """The fork tree holds the fix, untouched, with no scratch worktree left."""
    repo = tree.repo
    assert repo.rev("HEAD") == tree.head
    assert repo.dirty() == []
    assert (tree.path / "toy/calc.py").read_bytes() == repo.read_blob(
        "HEAD:toy/calc.py"
    )
    assert worktrees(repo) == 1
    assert not scratch_root(tree.path).exists()


def project(tmp_path: Path, up: SyntheticUpstream, **kw: Any) -> ForkConfig:
    return make_project(tmp_path / "proj", up, "1.0", **kw)


@pytest.mark.e2e
def test_valid_proof(toy_project: ForkConfig, tmp_path: Path) -> None:
    tree = materialize(toy_project)
    out = tmp_path / "reports"
    result = prove(Line.of(toy_project), tree, out_dir=out, stream=False)
    assert result.valid, result.problems
    assert result.classification.ids("FAIL_TO_PASS") == [FIX_ID]
    assert result.red.counts()["failed"] == 1 and result.red.report is not None
    assert result.red.report.tests[FIX_ID].kind == "AssertionError"
    assert result.green.counts()["passed"] == 1
    assert result.related is not None and result.related.counts()["passed"] == 3
    # Red ran on HEAD's tree with only the runtime file from base.
    git = tree.repo
    assert git.blob(result.red.tree, "toy/calc.py") == git.blob("base", "toy/calc.py")
    assert git.blob(result.red.tree, "tests/test_fix.py") == git.blob(
        "HEAD", "tests/test_fix.py"
    )
    assert result.green.tree == git.tree("HEAD")
    # Reports: Markdown, JSON and JUnit XMLs side by side.
    md = (out / "red_green.md").read_text()
    assert md == render_markdown(result)
    assert "✅ **valid**" in md and "`tests/test_fix.py::test_limit_reaches_n`" in md
    fix_commit = tree.patch_commits[0][1][:12]  # red: the fix's runtime reversed
    assert f"git show --format= {fix_commit} -- toy/calc.py | git apply -R" in md
    assert "(red: AssertionError: assert 15999 == 16000)" in md
    data = json.loads((out / "red_green.json").read_text())
    assert (data["schema"], data["version"]) == ("forkkit.red-green", 2)
    assert data["valid"] is True
    assert data["classification"]["FAIL_TO_PASS"] == [
        "tests/test_fix.py::test_limit_reaches_n"
    ]
    blobs = {f["path"]: f for f in data["files"]}
    assert blobs["toy/calc.py"]["base_blob"] == git.blob(tree.base, "toy/calc.py")
    assert blobs["toy/calc.py"]["fix_blob"] == git.blob(tree.head, "toy/calc.py")
    assert blobs["tests/test_fix.py"]["base_blob"] is None
    assert data["fork_head"]["commit"] == tree.head
    for name in ("red", "green", "related"):
        assert (out / f"red_green_{name}.xml").is_file()
        # named relative to the report's own folder: no local paths
        assert data[name]["junit"] == f"red_green_{name}.xml"
        assert (out / data[name]["log"]).is_file()
    assert not (out / "FAILED.txt").exists()
    assert_fork_intact(tree)


@pytest.mark.e2e
def test_parallel_proof_matches_sequential(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    tree = materialize(toy_project)
    result = prove(
        Line.of(toy_project), tree, related=False, parallel=True, out_dir=tmp_path / "r"
    )
    assert result.valid, result.problems
    assert result.classification.ids("FAIL_TO_PASS") == [FIX_ID]
    assert result.related is None
    assert_fork_intact(tree)


@pytest.mark.e2e
def test_import_error_red_is_invalid(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg = project(tmp_path, toy_upstream, changes=toy_import_fix_changes())
    tree = materialize(cfg)
    result = prove(Line.of(cfg), tree, out_dir=tmp_path / "r", stream=False)
    assert not result.valid
    assert result.red.report is not None
    assert result.red.report.collection_errors
    assert any("cannot be collected" in p for p in result.problems)
    assert not result.classification.ids("FAIL_TO_PASS")
    # green is read from the one run on the fix; no rechecks on an invalid proof
    assert result.related is not None and result.related_base is None
    assert "❌ **invalid**" in render_markdown(result)
    assert_fork_intact(tree)


@pytest.mark.e2e
def test_no_tests_run_is_invalid(toy_project: ForkConfig, tmp_path: Path) -> None:
    tree = materialize(toy_project)
    result = prove(
        Line.of(toy_project),
        tree,
        pytest_args=["-k", "selects_nothing"],
        related=False,
        out_dir=tmp_path / "r",
        stream=False,
    )
    assert not result.valid
    assert "red run executed no tests" in result.problems
    assert "green run executed no tests" in result.problems


@pytest.mark.e2e
def test_pass_to_fail_is_invalid(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg = project(tmp_path, toy_upstream, changes=toy_breaking_fix_changes())
    tree = materialize(cfg)
    result = prove(
        Line.of(cfg),
        tree,
        tests=["tests/test_fix.py", "tests/test_other.py"],
        related=False,
        out_dir=tmp_path / "r",
        stream=False,
    )
    assert not result.valid
    assert result.classification.ids("PASS_TO_FAIL") == [
        "tests.test_other::test_double"
    ]
    assert result.classification.ids("FAIL_TO_PASS") == [FIX_ID]
    assert any("PASS_TO_FAIL" in p for p in result.problems)
    assert "`tests/test_other.py::test_double`" in render_markdown(result)


@pytest.mark.e2e
def test_related_regression_vs_preexisting_failure(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    broken = "def test_always_broken():\n    assert 1 == 2\n"
    toy_upstream.publish("1.1", {**BUGGY, "tests/test_broken.py": broken})
    # Focused proof is fine; the related suites catch test_double (regression)
    # and test_always_broken (fails on base as well: pre-existing).
    cfg = make_project(
        tmp_path / "proj", toy_upstream, "1.1", changes=toy_breaking_fix_changes()
    )
    tree = materialize(cfg)
    result = prove(Line.of(cfg), tree, out_dir=tmp_path / "r", stream=False)
    v = result.related_verdict
    assert v.regressions == ("tests.test_other::test_double",)
    assert v.preexisting == ("tests.test_broken::test_always_broken",)
    assert result.related_base is not None
    assert not result.valid
    assert [p for p in result.problems if "related suites" in p]
    md = render_markdown(result)
    assert "Pre-existing failures" in md and "Regressions" in md
    assert "not caused by the fix): 1 \u00d7 AssertionError." in md  # by cause


@pytest.mark.e2e
def test_preexisting_related_failure_keeps_proof_valid(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    broken = "def test_always_broken():\n    assert 1 == 2\n"
    toy_upstream.publish("1.1", {**BUGGY, "tests/test_broken.py": broken})
    cfg = make_project(tmp_path / "proj", toy_upstream, "1.1")
    result = prove(Line.of(cfg), materialize(cfg), out_dir=tmp_path / "r", stream=False)
    assert result.valid, result.problems
    assert result.related_verdict.preexisting == (
        "tests.test_broken::test_always_broken",
    )


def test_empty_series_has_nothing_to_prove(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg = project(tmp_path, toy_upstream, changes=[])
    tree = materialize(cfg)
    with pytest.raises(ForkkitError, match="the series carries no fix; add one"):
        prove(Line.of(cfg), tree, related=False, out_dir=tmp_path / "r", stream=False)


@pytest.mark.e2e
def test_timeout_is_invalid_and_restores(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOY_MARK", str(tmp_path / "mark"))
    monkeypatch.setenv(testenv.PASS_ENV, "TOY_MARK")  # the caller names it
    cfg = project(tmp_path, toy_upstream, changes=toy_slow_red_changes())
    tree = materialize(cfg)
    start = time.monotonic()
    result = prove(
        Line.of(cfg),
        tree,
        related=False,
        timeout=4,
        out_dir=tmp_path / "r",
        stream=False,
    )
    assert time.monotonic() - start < 60
    assert result.red.run.timed_out and result.red.report is None
    assert not result.valid
    timed_out = next(p for p in result.problems if "timed out" in p)
    # the report names the test that was running when the timeout cut it
    assert f"while {result.red.run.running} ran" in timed_out
    assert result.red.run.running.startswith("tests/test_fix.py::")
    assert_fork_intact(tree)


# a red that appends its start to TOY_MARK, then hangs on base
_HANGING_RED = """\
import os
import time

from toy.calc import limit


def test_limit_reaches_n():
    if limit(3) != 3:
        with open(os.environ["TOY_MARK"], "a") as fh:
            fh.write(f"{os.getpid()}\\n")
        time.sleep(120)
    assert limit(16000) == 16000
"""


@pytest.mark.e2e
def test_a_red_lost_in_the_schedule_is_not_waited_for_twice(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The schedule runs the red ahead and it times out; the fix's proof then
    reads that very run (invalid: timed out) instead of hanging again."""
    from forkkit import cli

    mark = tmp_path / "starts"
    monkeypatch.setenv("TOY_MARK", str(mark))
    monkeypatch.setenv(testenv.PASS_ENV, "TOY_MARK")
    changes = [
        (
            "[Bugfix] limit (hangs on base)",
            {"toy/calc.py": FIXED_CALC, "tests/test_fix.py": _HANGING_RED},
        )
    ]
    cfg = project(tmp_path, toy_upstream, changes=changes)
    argv = ["--config", str(cfg.path), "red-green", "--parallel", "on"]
    assert cli.main([*argv, "--timeout", "4"]) == 1
    err = capfd.readouterr().err
    assert "on 2 cores, longest first" in err  # the red ran in the schedule
    assert mark.is_file(), err
    assert len(mark.read_text().splitlines()) == 1, err  # and only there
    assert "it did not finish; not run again" in err
    doc = json.loads((cfg.work.report_dir("red_green") / "summary.json").read_text())
    assert doc["valid"] is False


@pytest.mark.e2e
def test_unknown_related_suite_is_a_user_error(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg = project(tmp_path, toy_upstream, related_suites=("tests/nope.py",))
    tree = materialize(cfg)
    with pytest.raises(ForkkitError, match=r"tests/nope.py.*fix the path"):
        prove(Line.of(cfg), tree, out_dir=tmp_path / "r")
    env = {**os.environ, "PYTHONPATH": SRC}
    proc = subprocess.run(
        [sys.executable, "-m", "forkkit", "--config", str(cfg.path), "red-green"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("forkkit: error: ")


@pytest.mark.e2e
def test_dirty_fork_tree_is_refused(toy_project: ForkConfig, tmp_path: Path) -> None:
    """Refused in one line, before the report folder is touched: the last
    good report stays (#44)."""
    tree = materialize(toy_project)
    assert prove(Line.of(toy_project), tree, out_dir=tmp_path / "r", stream=False).valid
    good = (tmp_path / "r" / "red_green.json").read_bytes()
    (tree.path / "toy/calc.py").write_text("broken = True\n")
    for n in range(4):
        (tree.path / f"notes{n}.txt").write_text("mine\n")
    with pytest.raises(ForkkitError) as err:
        prove(Line.of(toy_project), tree, out_dir=tmp_path / "r")
    msg = str(err.value)
    assert "uncommitted changes in the fork tree (5 file(s): notes0.txt, " in msg
    assert "and 2 more); red-green tests committed trees only" in msg
    assert "\n" not in msg
    assert not (tmp_path / "r" / "FAILED.txt").exists()
    assert (tmp_path / "r" / "red_green.json").read_bytes() == good
    assert (tree.path / "notes3.txt").read_text() == "mine\n"  # never touched


# A "fix" that changes the runtime but does not fix the bug (FAIL_TO_FAIL) ...
WRONG_FIX = [
    (
        "[Bugfix] a wrong fix",
        {
            "toy/calc.py": BUGGY["toy/calc.py"].replace("n - 1", "n - 2"),
            "tests/test_fix.py": FIX_TEST,
        },
    )
]
# ... and an untracked file in the fork tree that makes it pass in place.
CHEAT_CONFTEST = "import toy.calc\n\ntoy.calc.limit = lambda n: n\n"


@pytest.mark.e2e
def test_untracked_file_that_changes_green_is_refused(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg = project(tmp_path, toy_upstream, changes=WRONG_FIX)
    tree = materialize(cfg)
    honest = prove(
        Line.of(cfg), tree, related=False, out_dir=tmp_path / "h", stream=False
    )
    assert not honest.valid
    assert honest.classification.ids("FAIL_TO_FAIL") == [FIX_ID]
    (tree.path / "tests/conftest.py").write_text(CHEAT_CONFTEST)
    out = tmp_path / "r"
    with pytest.raises(ForkkitError) as err:
        prove(Line.of(cfg), tree, related=False, out_dir=out, stream=False)
    msg = str(err.value)
    assert msg.startswith(f"{tree.path}: uncommitted changes in the fork tree")
    assert "(1 file(s): tests/conftest.py)" in msg
    assert "commit them and run 'forkkit export', or move them out" in msg
    assert not (out / "FAILED.txt").exists() and not (out / "red_green.json").exists()


_UNCHECKED_PYC = (
    "import importlib.util, py_compile, sys\n"
    "py_compile.compile(sys.argv[1], cfile=importlib.util.cache_from_source("
    "sys.argv[1]), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)"
)


@pytest.mark.e2e
def test_ignored_files_python_can_load_never_reach_a_run(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    """Issues 25 and 33: git status is clean when the cheat is git-ignored: a
    sitecustomize.py, or bytecode of a "fixed" calc.py in an ignored
    __pycache__ (unchecked-hash: Python loads it without reading the source).
    Every run happens in a fresh checkout of its commit: neither can reach
    it, and the wrong fix is shown wrong (before: refused by name, or, for
    the bytecode, proven valid)."""
    cfg = project(tmp_path, toy_upstream, changes=WRONG_FIX)
    tree = materialize(cfg)
    exclude = tree.repo.git_dir() / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    exclude.write_text("sitecustomize.py\n__pycache__/\n")
    calc = tree.path / "toy/calc.py"
    honest = calc.read_text()
    calc.write_text(FIXED_CALC)
    python = str(testenv.ensure_testenv(cfg, tree.path).python)
    subprocess.run([python, "-c", _UNCHECKED_PYC, str(calc)], check=True)
    calc.write_text(honest)
    assert list((tree.path / "toy/__pycache__").glob("calc.*.pyc"))
    (tree.path / "sitecustomize.py").write_text(CHEAT_CONFTEST)
    assert tree.repo.dirty() == []  # git sees nothing
    result = prove(
        Line.of(cfg), tree, related=False, out_dir=tmp_path / "r", stream=False
    )
    assert not result.valid
    assert result.classification.ids("FAIL_TO_FAIL") == [FIX_ID]  # the truth
    assert (tree.path / "sitecustomize.py").is_file()  # the user's files stay


@pytest.mark.e2e
def test_tests_writing_into_the_fork_tree_make_the_proof_invalid(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    writer = FIX_TEST + "\n\ndef test_writes():\n    open('stray.txt', 'w').close()\n"
    changes = [
        ("[Bugfix] limit", {"toy/calc.py": FIXED_CALC, "tests/test_fix.py": writer})
    ]
    cfg = project(tmp_path, toy_upstream, changes=changes)
    tree = materialize(cfg)
    result = prove(
        Line.of(cfg), tree, related=False, out_dir=tmp_path / "r", stream=False
    )
    assert result.classification.ids("FAIL_TO_PASS") == [FIX_ID]
    assert not result.valid
    assert any(
        "the tests wrote into the tree they ran in (stray.txt)" in p
        for p in result.problems
    ), result.problems


@pytest.mark.e2e
def test_failed_run_replaces_the_previous_valid_report(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    tree = materialize(toy_project)
    out = tmp_path / "r"
    assert prove(
        Line.of(toy_project), tree, related=False, out_dir=out, stream=False
    ).valid
    assert json.loads((out / "red_green.json").read_text())["valid"] is True
    with pytest.raises(ForkkitError, match="unrecognized arguments: --bogus-opt"):
        prove(
            Line.of(toy_project),
            tree,
            related=False,
            pytest_args=["--bogus-opt"],
            out_dir=out,
            stream=False,
        )
    assert not (out / "red_green.json").exists()
    assert not (out / "red_green.md").exists()
    assert not (out / "red_green_green.xml").exists()
    assert "this run did not finish" in (out / "FAILED.txt").read_text()
    assert "--bogus-opt" in (out / "red_green_red.log").read_text()
    # Without --out: a fresh folder published as <workdir>/reports/red_green/ID.
    published = toy_project.work.report_dir("red_green") / "toy-fix"
    result = prove(Line.of(toy_project), tree, related=False, stream=False)
    assert result.out_dir == published
    assert json.loads((published / "red_green.json").read_text())["valid"] is True
    assert not list(published.parent.glob(".*.run-*"))  # no staging left


@pytest.mark.e2e
def test_concurrent_runs_read_only_their_own_junit(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    """A on one fork hangs in red while B proves another fork on the same
    workdir; A's red pytest then dies without JUnit: A must not read B's."""
    slow = project(tmp_path, toy_upstream, changes=toy_slow_red_changes())
    mark = tmp_path / "mark"
    env = {**os.environ, "TOY_MARK": str(mark), "PYTHONPATH": SRC, **PASS_MARK}
    cmd = [sys.executable, "-m", "forkkit", "--config", str(slow.path), "red-green"]
    a = subprocess.Popen(
        # one red, in the proof: a red the schedule ran ahead and lost would
        # run again in the proof (and hang again here)
        [*cmd, "--no-related", "--parallel", "off"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():
            assert a.poll() is None, a.communicate()
            assert time.monotonic() < deadline, "red never started"
            time.sleep(0.1)
        b_tree = materialize(toy_project, dest=tmp_path / "fork-b")
        b = prove(Line.of(toy_project), b_tree, related=False, stream=False)
        assert b.valid, b.problems
        pid = int(mark.read_text().split(" ", 1)[0])
        os.kill(pid, signal.SIGKILL)  # A's red dies before writing its JUnit
        out, err = a.communicate(timeout=60)
    finally:
        if a.poll() is None:
            a.kill()
    assert a.returncode == 1, err
    assert "❌ **invalid**" in out and "no JUnit XML" in out


def test_out_folder_with_foreign_files_is_refused(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    tree = materialize(toy_project)
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("keep me\n")
    with pytest.raises(ForkkitError, match=r"mine: holds 1 file\(s\) forkkit did not"):
        prove(Line.of(toy_project), tree, out_dir=out, stream=False)
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]


@pytest.mark.e2e
@pytest.mark.parametrize(
    "extra",
    [["--", "-k", "selects_nothing"], ["--timeout", "4"]],
    ids=["none", "timeout"],
)
def test_exit_code_is_1_when_nothing_ran_or_a_run_is_partial(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    extra: list[str],
) -> None:
    cfg = project(tmp_path, toy_upstream, changes=toy_slow_red_changes())
    env = {
        **os.environ,
        "TOY_MARK": str(tmp_path / "mark"),
        "PYTHONPATH": SRC,
        **PASS_MARK,
    }
    cmd = [sys.executable, "-m", "forkkit", "--config", str(cfg.path), "red-green"]
    proc = subprocess.run(
        [*cmd, "--no-related", *extra], env=env, capture_output=True, text=True
    )
    assert proc.returncode == 1, proc.stderr
    assert "❌ **invalid**" in proc.stdout


@pytest.mark.e2e
def test_fork_runs_reusable(toy_project: ForkConfig, tmp_path: Path) -> None:
    tree = materialize(toy_project)
    env = testenv.TestEnv(python=Path(sys.executable), env={}, key="t")
    runs = ForkRuns(runtime_files=("toy/calc.py",), env=env, out_dir=tmp_path / "o")
    red = runs.run(tree.path, "base", ["tests"], name="a")
    green = runs.run(tree, "HEAD", ["tests"], name="b")
    assert red.report is not None and green.report is not None
    assert red.counts()["failed"] == 1 and red.counts()["passed"] == 2
    assert green.counts()["passed"] == 3
    c = classify(red.report, green.report)
    assert c.ids("FAIL_TO_PASS") == [FIX_ID] and len(c.ids("PASS_TO_PASS")) == 2
    assert_fork_intact(tree)


def start_until_red(
    cfg: ForkConfig, tmp_path: Path, *, parallel: str
) -> tuple[subprocess.Popen[str], str, str]:
    """A ``forkkit red-green`` process, once its (hanging) red has started:
    the process, and the red pytest's pid and working directory."""
    mark = tmp_path / "mark"
    env = {**os.environ, "TOY_MARK": str(mark), "PYTHONPATH": SRC, **PASS_MARK}
    cmd = [sys.executable, "-m", "forkkit", "--config", str(cfg.path), "red-green"]
    proc = subprocess.Popen(
        [*cmd, "--no-related", "--parallel", parallel],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not mark.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"red never started: {proc.communicate()}")
        time.sleep(0.05)
    pid, cwd = mark.read_text().split(" ", 1)
    return proc, pid, cwd


SIGNAL_CASES = [(signal.SIGTERM, "off"), (signal.SIGINT, "off"), (signal.SIGTERM, "on")]


@pytest.mark.e2e
@pytest.mark.parametrize(("sig", "parallel"), SIGNAL_CASES)
def test_interrupt_during_red_restores_fix(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    sig: signal.Signals,
    parallel: str,
) -> None:
    cfg = project(tmp_path, toy_upstream, changes=toy_slow_red_changes())
    tree = materialize(cfg)
    proc, pid, cwd = start_until_red(cfg, tmp_path, parallel=parallel)
    try:
        assert Path(cwd) != tree.path  # red runs in a scratch worktree
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err  # 130 for SIGINT, 143 for SIGTERM
    assert "forkkit: interrupted" in err
    failed = cfg.work.report_dir("red_green") / "FAILED.txt"
    assert f"Interrupted: {sig.name}" in failed.read_text()
    assert not (cfg.work.report_dir("red_green") / "red_green.json").exists()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)  # the hanging pytest is gone, not orphaned
    assert not Path(cwd).exists()
    assert (tree.path / "toy/calc.py").read_text() == FIXED_CALC
    assert_fork_intact(tree)


@pytest.mark.e2e
def test_sigkill_leftover_worktree_is_pruned_next_run(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg = project(tmp_path, toy_upstream, changes=toy_slow_red_changes())
    tree = materialize(cfg)
    mark = tmp_path / "mark"
    env = {
        **os.environ,
        "TOY_MARK": str(mark),
        "PYTHONPATH": SRC,
        **PASS_MARK,
    }
    cmd = [sys.executable, "-m", "forkkit", "--config", str(cfg.path), "red-green"]
    # --parallel off: red alone, so exactly one scratch worktree is left
    off = ["--no-related", "--parallel", "off"]
    proc = subprocess.Popen([*cmd, *off], env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not mark.exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        proc.kill()  # SIGKILL: no finally runs; the scratch worktree stays
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        pid, cwd = mark.read_text().split(" ", 1)
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)  # the orphaned red pytest
    assert Path(cwd).is_dir()
    assert worktrees(tree.repo) == 2
    # The fork tree itself was never touched, even by a SIGKILL.
    assert tree.repo.dirty() == []
    assert (tree.path / "toy/calc.py").read_text() == FIXED_CALC
    result = prove(
        Line.of(cfg), tree, related=False, out_dir=tmp_path / "r", stream=False
    )
    assert result.valid, result.problems
    assert not Path(cwd).exists()
    assert_fork_intact(tree)


@pytest.mark.e2e
def test_a_stale_worktree_goes_even_when_every_run_is_cached(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    """Issue 25, 7: a killed run's scratch worktree was pruned only when a
    new one was made; a rerun served from the result cache left it."""
    tree = materialize(toy_project)
    prove(
        Line.of(toy_project), tree, related=False, out_dir=tmp_path / "a", stream=False
    )
    dead = dead_pid()
    stale = scratch_root(tree.path) / f"{tree.path.name}-red_green_red-{dead}"
    stale.parent.mkdir(exist_ok=True)
    subprocess.run(
        [
            "git",
            "-C",
            str(tree.path),
            "worktree",
            "add",
            "-q",
            "--detach",
            str(stale),
            "HEAD",
        ],
        check=True,
    )
    again = prove(
        Line.of(toy_project), tree, related=False, out_dir=tmp_path / "b", stream=False
    )
    assert again.red.cached and again.green.cached
    assert not stale.exists()
    assert_fork_intact(tree)


@pytest.mark.e2e
def test_a_pytest_config_above_the_fork_tree_changes_nothing(
    toy_upstream: SyntheticUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork tree without its own pytest config, under a folder that has one
    (the checkout the workdir sits in): pytest took that folder as rootdir,
    red (in a scratch worktree) and green (in place) got different test ids,
    and the proof said 'no FAIL_TO_PASS' (seen under nox's TMPDIR)."""
    outer = tmp_path / "outer"
    outer.mkdir()
    (outer / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    (outer / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture(autouse=True)\n"
        "def _boom():\n    raise RuntimeError('above')\n"
    )
    monkeypatch.setenv("FORKKIT_WORKDIR", str(outer / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", sys.executable)
    cfg = project(outer, toy_upstream)
    tree = materialize(cfg)
    result = prove(
        Line.of(cfg), tree, related=False, out_dir=tmp_path / "r", stream=False
    )
    assert result.valid, result.problems
    assert result.classification.ids("FAIL_TO_PASS") == [FIX_ID]


def test_node_id_and_helpers() -> None:
    files = frozenset({"tests/a/test_x.py", "tests/test_y.py"})
    assert (
        node_id("tests.a.test_x::test_f[1-2]", files)
        == "tests/a/test_x.py::test_f[1-2]"
    )
    assert node_id("tests.a.test_x.TestC::test_g", files) == (
        "tests/a/test_x.py::TestC::test_g"
    )
    assert node_id("tests.a.test_x", files) == "tests/a/test_x.py"
    assert node_id("other.mod::t", files) is None
    changed = ["vllm/a.py", "vllm/b.py", "tests/v1/test_a.py", "pkg/test_x.py"]
    assert untested_changes(changed, ["vllm/a.py"]) == ["vllm/b.py"]
    assert resolve_parallel("auto", cpus=2, busy=0.2) is True  # 2 cores free
    assert resolve_parallel("auto", cpus=2, busy=1.0) is False
    assert resolve_parallel("auto", cpus=8, busy=5.5) is True
    assert resolve_parallel("on") and not resolve_parallel("off")

    def rep(**outcomes: junit.Outcome) -> junit.JunitReport:
        return junit.JunitReport(
            tests={
                f"m::{k}": junit.TestOutcome(f"m::{k}", v, 0.0)
                for k, v in outcomes.items()
            }
        )

    fix = rep(a="failed", b="failed", c="passed")
    base = rep(a="passed", b="error", c="passed")
    v = related_verdict(fix, base)
    assert v.regressions == ("m::a",) and v.preexisting == ("m::b",)


def test_scratch_worktrees_nest_without_clobbering(toy_project: ForkConfig) -> None:
    tree = materialize(toy_project)
    with (
        tree.repo.worktree("base", "x") as a,
        tree.repo.worktree("HEAD", "x") as b,
    ):
        assert a.path != b.path
        assert "n - 1" in (a.path / "toy/calc.py").read_text()
        assert (b.path / "toy/calc.py").read_text() == FIXED_CALC
        assert worktrees(tree.repo) == 3
    assert_fork_intact(tree)


def test_pytest_usage_error_is_a_user_error(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    tree = materialize(toy_project)
    with pytest.raises(ForkkitError, match="unrecognized arguments: --bogus-opt"):
        prove(
            Line.of(toy_project),
            tree,
            pytest_args=["--bogus-opt"],
            out_dir=tmp_path / "r",
        )
    assert_fork_intact(tree)
