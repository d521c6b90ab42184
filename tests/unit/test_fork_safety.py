# SPDX-License-Identifier: Apache-2.0
"""The safety contract of the fork layer, with real git, real processes, real signals.

Each test here failed on the code before the safe layer (commit 7069411):
export deleted patches when run off branch ``fork``, dropped comments and
drafts, ``--force`` wiped a foreign repository, and an interrupted build
followed by ``export`` lost patches.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.vcs.git import Git
from tests.synthetic import FIX_TEST, FIXED_CALC, SyntheticUpstream, make_project

THREE = [
    ("[Bugfix] limit reaches n", {"toy/calc.py": FIXED_CALC}),
    ("[Test] regression test for limit", {"tests/test_fix.py": FIX_TEST}),
    ("[Misc] rename", {"toy/other.py": "def name():\n    return 'fork'\n"}),
]
SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]


@pytest.fixture
def project(
    tmp_path: Path, toy_upstream: SyntheticUpstream, monkeypatch: pytest.MonkeyPatch
) -> ForkConfig:
    """A project carrying three patches, its workdir inside it."""
    monkeypatch.delenv("FORKKIT_WORKDIR", raising=False)
    return make_project(tmp_path / "project", toy_upstream, "1.0", THREE)


NOTES_MSG = "[Doc] notes\n\nSigned-off-by: t <t@t>\nForkkit-Fix: toy-fix"


def forkkit(
    cfg: ForkConfig, *args: str, pause_at: str = "", check: bool = False
) -> subprocess.CompletedProcess[str]:
    """``python -m forkkit ARGS`` in the project, as a user runs it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORKKIT_")}
    if pause_at:
        env["FORKKIT_PAUSE_AT"] = pause_at
    proc = subprocess.run(
        [sys.executable, "-m", "forkkit", *args],
        cwd=cfg.root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def interrupt(cfg: ForkConfig, args: list[str], *, at: str, sig: int) -> str:
    """Run forkkit until the progress line containing ``at``, then signal it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORKKIT_")}
    env["FORKKIT_PAUSE_AT"] = at
    proc = subprocess.Popen(
        [sys.executable, "-m", "forkkit", *args],
        cwd=cfg.root,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + 60
    for line in proc.stderr:
        seen.append(line)
        if at in line:
            proc.send_signal(sig)
            break
        assert time.monotonic() < deadline
    else:
        proc.wait()
        pytest.fail(f"never reached {at!r}:\n{''.join(seen)}")
    rest = proc.stderr.read()
    proc.wait(timeout=60)
    assert proc.returncode != 0
    assert "Traceback" not in rest, rest
    return "".join(seen) + rest


def user_files(cfg: ForkConfig) -> dict[str, bytes]:
    """patches/ and fork.toml, byte for byte."""
    files = {p.name: p.read_bytes() for p in sorted(cfg.patches_dir.iterdir())}
    files["fork.toml"] = cfg.path.read_bytes()
    return files


def git(cfg: ForkConfig, *args: str) -> str:
    return Git(cfg.workdir / "fork").out(*args)


@pytest.mark.e2e
def test_export_refuses_off_branch_and_never_moves_fork_back(
    project: ForkConfig,
) -> None:
    forkkit(project, "materialize", check=True)
    before = user_files(project)
    fork_head = git(project, "rev-parse", "fork")
    for how in (["checkout", "-q", "base"], ["checkout", "-q", "fork~2"]):
        Git(project.workdir / "fork").run(*how)
        proc = forkkit(project, "export")
        assert proc.returncode == 2, proc.stderr
        assert "not 'fork'" in proc.stderr and "nothing written" in proc.stderr
        assert user_files(project) == before
        assert git(project, "rev-parse", "fork") == fork_head
    # On branch fork but moved back: refused as well, fork stays where it was.
    Git(project.workdir / "fork").run("checkout", "-q", "-B", "fork", "fork~1")
    proc = forkkit(project, "export")
    assert proc.returncode == 2
    assert "does not contain the built series" in proc.stderr
    assert user_files(project) == before


@pytest.mark.e2e
def test_export_keeps_comments_and_leaves_unknown_patches_alone(
    project: ForkConfig,
) -> None:
    series = project.series_file
    series.write_text("# carried fix, in order\n" + series.read_text() + "# end\n")
    draft = project.patches_dir / "0100-draft.patch"
    draft.write_text("not in the series yet\n")
    forkkit(project, "materialize", check=True)
    tree = project.workdir / "fork"
    (tree / "NOTES.md").write_text("notes\n")
    Git(tree).run("add", "NOTES.md")
    Git(tree).run(
        "commit",
        "-q",
        "-m",
        NOTES_MSG,
    )
    proc = forkkit(project, "export", check=True)
    assert "left alone" in proc.stderr and "0100-draft.patch" in proc.stderr
    assert draft.read_text() == "not in the series yet\n"
    lines = series.read_text().splitlines()
    assert lines[0] == "# carried fix, in order" and lines[-1] == "# end"
    assert lines[-2] == "0004-Doc-notes.patch"
    assert forkkit(project, "materialize", check=True).stderr.count("up to date") == 1


def test_force_never_resets_a_repository_forkkit_did_not_build(
    project: ForkConfig, tmp_path: Path
) -> None:
    mine = Git.init(tmp_path / "mine")
    (mine.cwd / "work.py").write_text("x = 1\n")
    mine.run("add", "-A")
    mine.run("commit", "-q", "-m", "mine")
    (mine.cwd / "work.py").write_text("x = 2\n")  # uncommitted
    (mine.cwd / "scratch.txt").write_text("untracked\n")
    proc = forkkit(project, "materialize", "--dest", str(mine.cwd), "--force")
    assert proc.returncode == 2
    assert "forkkit did not build" in proc.stderr
    assert (mine.cwd / "work.py").read_text() == "x = 2\n"
    assert (mine.cwd / "scratch.txt").exists()


@pytest.mark.e2e
def test_interrupted_build_then_export_loses_no_patch(project: ForkConfig) -> None:
    """The issue's first scenario: Ctrl-C at 'applying 2/3', then export."""
    before = user_files(project)
    out = interrupt(project, ["materialize"], at="applying 2/3", sig=signal.SIGINT)
    assert "interrupted" in out
    proc = forkkit(project, "export")
    assert proc.returncode == 0, proc.stderr
    assert "nothing to export" in proc.stderr
    assert user_files(project) == before
    assert "up to date" in forkkit(project, "materialize", check=True).stderr


def _commit_as_a_user(cfg: ForkConfig, path: str, text: str, subject: str) -> str:
    """A commit of a user's (not forkkit's identity) in the fork tree."""
    fork = cfg.workdir / "fork"
    (fork / path).write_text(text)
    who = {"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com"}
    who |= {"GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.com"}
    env = {**os.environ, **who}
    run = ["git", "-C", str(fork)]
    subprocess.run([*run, "add", "-A"], check=True, env=env)
    message = f"{subject}\n\nForkkit-Fix: toy-fix\nSigned-off-by: Ada <ada@example.com>"
    subprocess.run([*run, "commit", "-qm", message], check=True, env=env)
    return git(cfg, "rev-parse", "HEAD")


@pytest.mark.e2e
def test_commits_on_top_of_an_interrupted_build_are_kept_and_exported(
    project: ForkConfig,
) -> None:
    """Issue 33, item 5: Ctrl-C at 'applying 2/3', then a commit of yours on
    top: the next materialize finishes the build and picks your commit onto
    it (author and committer kept), and export writes it as a patch."""
    interrupt(project, ["materialize"], at="applying 2/3", sig=signal.SIGINT)
    mine = _commit_as_a_user(project, "toy/extra.py", "X = 1\n", "[Misc] extra")
    proc = forkkit(project, "materialize")
    assert proc.returncode == 0, proc.stderr
    assert "kept 1 commit(s) of yours from the interrupted build" in proc.stderr
    assert git(project, "log", "-1", "--format=%s %ae %ce") == (
        "[Misc] extra ada@example.com ada@example.com"
    )
    assert git(project, "rev-parse", "HEAD") != mine  # picked, a new commit
    assert git(project, "rev-list", "--count", "base..HEAD") == "4"  # 3 + yours
    assert not git(project, "for-each-ref", "refs/forkkit/kept")
    proc = forkkit(project, "export")
    assert proc.returncode == 0, proc.stderr
    series = project.series_file.read_text().split()
    assert len(series) == 4 and series[-1].endswith("-Misc-extra.patch")
    assert "up to date" in forkkit(project, "materialize", check=True).stderr


@pytest.mark.e2e
def test_a_kept_commit_that_does_not_apply_stays_at_its_ref(
    project: ForkConfig,
) -> None:
    """A commit of yours on top of an interrupted build that conflicts with
    the rest of the series: named in one line, kept at its ref, nothing lost."""
    interrupt(project, ["materialize"], at="applying 2/3", sig=signal.SIGINT)
    mine = _commit_as_a_user(
        project, "toy/other.py", "def name():\n    return 'mine'\n", "[Misc] mine"
    )
    proc = forkkit(project, "materialize")
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert "does not apply to the finished series (conflict in toy/other.py)" in line
    assert git(project, "rev-parse", "refs/forkkit/kept") == mine
    assert not git(project, "status", "--porcelain")
    assert "Traceback" not in proc.stderr


MATERIALIZE_STEPS = [
    "extracting",
    "committing pristine",
    "checking out",
    "applying 1/3",
    "applying 3/3",
    "fork tree ready",
]


@pytest.mark.contract
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_materialize_interrupted_at_every_step(project: ForkConfig, sig: int) -> None:
    forkkit(project, "materialize", check=True)
    built = git(project, "rev-parse", "HEAD")
    last = project.patches_dir / sorted(project.series_file.read_text().split())[-1]
    for step in MATERIALIZE_STEPS:
        # Changed patch bytes make the next materialize rebuild the tree, and
        # with no recorded base it starts from the sdist again.
        last.write_bytes(last.read_bytes() + b"\n")
        fork = Git(project.workdir / "fork")
        fork.run("tag", "-d", "base", check=False)
        for ref in _pin_refs(project):
            fork.run("update-ref", "-d", ref)
        shutil.rmtree(project.workdir / "upstream", ignore_errors=True)
        expected = user_files(project)
        interrupt(project, ["materialize"], at=step, sig=sig)
        assert user_files(project) == expected
        proc = forkkit(project, "materialize")
        assert proc.returncode == 0, f"{step}: {proc.stderr}"
        assert git(project, "rev-parse", "HEAD") == built
        assert forkkit(project, "status").stdout.endswith("up to date\n")


def _pin_refs(cfg: ForkConfig) -> list[str]:
    out = git(cfg, "for-each-ref", "--format=%(refname)", "refs/forkkit/pin/")
    return out.split()


EXPORT_STEPS = [
    "checking that",
    "writing 4 patch(es)",
    "rebuilding",
    "applying 2/4",
    "applying 4/4",
]


@pytest.mark.contract
@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_export_interrupted_at_every_step(
    project: ForkConfig, tmp_path: Path, sig: int
) -> None:
    forkkit(project, "materialize", check=True)
    tree = project.workdir / "fork"
    (tree / "NOTES.md").write_text("notes\n")
    Git(tree).run("add", "NOTES.md")
    Git(tree).run(
        "commit",
        "-q",
        "-m",
        NOTES_MSG,
    )
    before = user_files(project)
    snapshot = tmp_path / "snapshot"
    Git(tree).run("bundle", "create", str(snapshot), "--all")
    for step in EXPORT_STEPS:
        interrupt(project, ["export"], at=step, sig=sig)
        now = user_files(project)
        proc = forkkit(project, "export")
        assert proc.returncode == 0, f"{step}: {proc.stderr}"
        after = user_files(project)
        assert now in (before, after), step  # byte-identical or completely updated
        assert after != before and "0004-Doc-notes.patch" in after
        assert forkkit(project, "status").stdout.endswith("up to date\n")
        # back to the commit on top of the old series for the next step
        _restore(project, before, snapshot)


def _restore(cfg: ForkConfig, files: dict[str, bytes], bundle: Path) -> None:
    for p in cfg.patches_dir.iterdir():
        p.unlink()
    for name, data in files.items():
        (cfg.path if name == "fork.toml" else cfg.patches_dir / name).write_bytes(data)
    forkkit(cfg, "materialize", "--force", check=True)
    tree = Git(cfg.workdir / "fork")
    tree.run("fetch", "-q", str(bundle), "refs/heads/fork:refs/remotes/b/fork")
    tree.run("reset", "-q", "--hard", "refs/remotes/b/fork")


@pytest.mark.e2e
def test_a_failed_build_never_takes_the_edits_made_after_it(
    project: ForkConfig,
) -> None:
    """Issue 25, 1: a build that failed before it touched the work tree (a
    wrong sha256 pin) left the tree marked 'building'; the next plain command,
    once the pin was right again, rebuilt over the edits made in between."""
    forkkit(project, "materialize", check=True)
    toml = project.path.read_text()
    wrong = toml.replace(project.upstream.release.sha256, "0" * 64)
    project.path.write_text(wrong)
    failed = forkkit(project, "materialize")
    assert failed.returncode == 2 and "sha256" in failed.stderr
    fork = project.workdir / "fork"
    (fork / "toy" / "calc.py").write_text("# my edit\n")
    (fork / "notes.txt").write_text("mine\n")
    project.path.write_text(toml)
    for command in ("materialize", "red-green"):
        proc = forkkit(project, command)
        assert proc.returncode == 2, proc.stderr
        err = [x for x in proc.stderr.splitlines() if x.startswith("forkkit: error")]
        assert len(err) == 1 and "toy/calc.py" in err[0] and "notes.txt" in err[0]
        assert (fork / "toy" / "calc.py").read_text() == "# my edit\n"
        assert (fork / "notes.txt").read_text() == "mine\n"
    # the user's way out, as the message says
    assert forkkit(project, "materialize", "--force").returncode == 0
    assert forkkit(project, "status").stdout.endswith("up to date\n")


@pytest.mark.e2e
def test_a_build_killed_in_the_work_tree_keeps_what_it_did_not_write(
    project: ForkConfig,
) -> None:
    """A build killed while it moved the work tree may redo its own writes,
    but a file it could not have written is the user's and stops it."""
    forkkit(project, "materialize", check=True)
    last = project.patches_dir / sorted(project.series_file.read_text().split())[-1]
    last.write_bytes(last.read_bytes() + b"\n")  # the next materialize rebuilds
    interrupt(project, ["materialize"], at="applying 2/3", sig=signal.SIGKILL)
    notes = project.workdir / "fork" / "notes.txt"
    notes.write_text("mine\n")
    proc = forkkit(project, "materialize")
    assert proc.returncode == 2 and "notes.txt" in proc.stderr, proc.stderr
    assert notes.read_text() == "mine\n"
    notes.unlink()
    assert forkkit(project, "materialize").returncode == 0
    assert forkkit(project, "status").stdout.endswith("up to date\n")


def _status(cfg: ForkConfig) -> str:
    proc = forkkit(cfg, "status")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.e2e
def test_status_tells_where_head_is(project: ForkConfig) -> None:
    """Issue 25, 7: status said 'commits on top of the built series' for a
    detached or an older HEAD."""
    forkkit(project, "materialize", check=True)
    fork = Git(project.workdir / "fork")
    fork.run("checkout", "-q", "--detach", "HEAD~1")
    assert "HEAD at an older commit of the built series" in _status(project)
    fork.run("checkout", "-q", "-b", "mine", "HEAD~1")
    (project.workdir / "fork" / "x.txt").write_text("x\n")
    fork.run("add", "x.txt")
    fork.run("commit", "-q", "-m", "mine")
    assert "HEAD at branch mine, not on the built series" in _status(project)
    fork.run("checkout", "-q", "fork")
    fork.run("commit", "-q", "--allow-empty", "-m", "on top")
    assert "1 commit(s) on top of the built series" in _status(project)


@pytest.mark.e2e
def test_status_tells_a_failed_fetch_and_a_live_build_apart(
    project: ForkConfig,
) -> None:
    """Issue 25, 7 / 24: after a failed fetch status said 'interrupted build'
    (no build touched the tree), and the same during a build still running."""
    forkkit(project, "materialize", check=True)
    toml = project.path.read_text()
    project.path.write_text(toml.replace(project.upstream.release.sha256, "0" * 64))
    assert forkkit(project, "materialize").returncode == 2
    assert "stopped before it touched the work tree" in _status(project)
    project.path.write_text(toml)
    last = project.patches_dir / sorted(project.series_file.read_text().split())[-1]
    last.write_bytes(last.read_bytes() + b"\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORKKIT_")}
    env |= {"FORKKIT_PAUSE_AT": "applying 2/3", "FORKKIT_PAUSE_S": "20"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "forkkit", "materialize"],
        cwd=project.root,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "applying 2/3" in line:
                break
        assert f"a build in progress (pid {proc.pid}" in _status(project)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.e2e
@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
def test_a_flagged_file_hides_no_edit(project: ForkConfig, flag: str) -> None:
    """git's own view, fully (#33 item 4): an edit to a file flagged
    skip-worktree or assume-unchanged (git status does not show it) is seen
    by status, refused by export and by a run, and never lost by a rebuild."""
    forkkit(project, "materialize", check=True)
    before = user_files(project)
    calc = project.workdir / "fork" / "toy" / "calc.py"
    git(project, "update-index", flag, "toy/calc.py")
    calc.write_text(calc.read_text() + "\nFLAGGED = 1\n")
    assert git(project, "status", "--porcelain") == ""  # what git itself shows
    assert "1 uncommitted or untracked file(s)" in forkkit(project, "status").stdout
    for args in (["export"], ["red-green", "--no-related"]):
        proc = forkkit(project, *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "toy/calc.py" in proc.stderr and "Traceback" not in proc.stderr
    assert not project.work.venvs.exists()  # refused before any venv build
    assert forkkit(project, "materialize").returncode == 0  # up to date: untouched
    assert "FLAGGED = 1" in calc.read_text() and user_files(project) == before
    # a rebuild (another pin) refuses to lose it
    proc = forkkit(project, "materialize", "--source", "git", "--rev", "v1.0")
    assert proc.returncode == 2 and "toy/calc.py" in proc.stderr, proc.stderr
    assert "FLAGGED = 1" in calc.read_text()


@pytest.mark.e2e
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_build_interrupted_in_the_work_tree_keeps_an_edit_to_a_patched_file(
    project: ForkConfig, sig: int
) -> None:
    """A rebuild never discards a change the build did not write (#33 item
    5): after Ctrl-C (or kill -9) at 'applying 2/3', an edit to a file a
    patch touches has content no step of the build could have written, so
    it is named and kept; the build's own content is rebuilt over."""
    forkkit(project, "materialize", check=True)
    last = project.patches_dir / sorted(project.series_file.read_text().split())[-1]
    last.write_bytes(last.read_bytes() + b"\n")  # the next materialize rebuilds
    interrupt(project, ["materialize"], at="applying 2/3", sig=sig)
    calc = project.workdir / "fork" / "toy" / "calc.py"
    built = calc.read_text()
    calc.write_text(built + "\n# my edit\n")
    proc = forkkit(project, "materialize")
    assert proc.returncode == 2 and "toy/calc.py" in proc.stderr, proc.stderr
    assert calc.read_text().endswith("# my edit\n")
    calc.write_text(built)  # back to what the build wrote: its own again
    assert forkkit(project, "materialize").returncode == 0
    assert forkkit(project, "status").stdout.endswith("up to date\n")
