# SPDX-License-Identifier: Apache-2.0
"""The one test-run service (testing/service.py): a spec, a workspace, the
result cache around the run and a rerun policy (real pytest subprocesses)."""

from __future__ import annotations

import sys
import time
from contextlib import nullcontext
from pathlib import Path

from forkkit.testing import env as testenv
from forkkit.testing import service
from forkkit.testing.cache import ResultCache
from forkkit.testing.pytest_run import PytestRun, run_pytest
from forkkit.testing.service import RunSpec


def _tree(root: Path) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_ok.py").write_text("def test_a():\n    assert True\n")
    (root / "tests" / "test_bad.py").write_text("import no_such_module\n")
    return root


def _spec(root: Path, targets: tuple[str, ...], *, tree: str = "t" * 40) -> RunSpec:
    # kept where forkkit keeps an external interpreter's digest, so this
    # interpreter is hashed once, not once per test process
    store = testenv.external_store(sys.executable)
    env = testenv.TestEnv(python=Path(sys.executable), env={}, key="t", store=store)
    return RunSpec("run", tree, targets, env, root / "out", ("-p", "no:cacheprovider"))


def test_a_finished_run_is_kept_and_stands_in_for_the_same_spec(
    tmp_path: Path,
) -> None:
    tree = _tree(tmp_path / "tree")
    cache = ResultCache(tmp_path / "cache")
    spec = _spec(tmp_path, ("tests/test_ok.py",))
    entered: list[Path] = []

    def workspace() -> nullcontext[Path]:
        entered.append(tree)
        return nullcontext(tree)

    first = service.run(spec, workspace=workspace, cache=cache, stream=False)
    assert first.finished and not first.cached and first.run.returncode == 0
    service.keep(spec, first, cache=cache, extra={"n": 1})
    # the same command reads it back as its own run (nothing ran again) ...
    shared = service.run(spec, workspace=workspace, cache=cache, stream=False)
    assert not shared.cached and shared.run.started == first.run.started
    # ... and a later command as a cached one
    cache = ResultCache(tmp_path / "cache")
    again = service.run(spec, workspace=workspace, cache=cache, stream=False)
    assert again.cached and again.extra == {"n": 1} and len(entered) == 1
    other = _spec(tmp_path, ("tests/test_ok.py",), tree="u" * 40)
    assert not service.run(other, workspace=workspace, cache=cache).cached


def test_the_rerun_policy_runs_again_with_fewer_targets(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    spec = _spec(tmp_path, ("tests/test_bad.py::test_x", "tests/test_ok.py"))
    seen: list[tuple[str, ...]] = []

    def drop_bad(
        run: PytestRun, targets: tuple[str, ...]
    ) -> tuple[tuple[str, ...], str] | None:
        seen.append(targets)
        rest = tuple(t for t in targets if "test_bad" not in t)
        return (rest, "dropped the bad module") if rest != targets else None

    ran = service.run(
        spec, workspace=lambda: nullcontext(tree), stream=False, rerun=drop_bad
    )
    assert seen == [spec.targets]  # asked once, after the first attempt
    assert ran.targets == ("tests/test_ok.py",) and ran.run.returncode == 0
    assert ran.notes == ("dropped the bad module",)


def test_an_unfinished_run_is_not_kept(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    (tree / "tests" / "test_slow.py").write_text(
        "import time\n\ndef test_s():\n    time.sleep(30)\n"
    )
    cache = ResultCache(tmp_path / "cache")
    spec = RunSpec(
        "slow",
        "s" * 40,
        ("tests/test_slow.py",),
        testenv.TestEnv(python=Path(sys.executable), env={}, key="t"),
        tmp_path / "out",
        timeout=0.5,
    )
    ran = service.run(spec, workspace=lambda: nullcontext(tree), cache=cache)
    assert ran.run.timed_out and not ran.finished
    service.keep(spec, ran, cache=cache)
    assert cache.get(spec.key()) is None


def _gone(pid: int) -> bool:
    """No such process, or one that has ended (a zombie not reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def test_a_run_ends_with_pytest_and_leaves_nothing_running(tmp_path: Path) -> None:
    """#35: once pytest is done the run's interpreter ends at once (its exit
    handlers and module teardown, about 2 s with torch loaded, are skipped)
    with pytest's exit status and its JUnit whole; and what a test left
    running is killed with the run's process group."""
    tree = tmp_path / "tree"
    (tree / "tests").mkdir(parents=True)
    pid_file, atexit_file = tmp_path / "sleeper.pid", tmp_path / "atexit.ran"
    (tree / "tests" / "test_leak.py").write_text(
        "import atexit, subprocess\n"
        f"atexit.register(lambda: open({str(atexit_file)!r}, 'w').close())\n"
        "def test_leaves_a_sleeper():\n"
        "    p = subprocess.Popen(['sleep', '300'])\n"
        f"    open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "def test_fails():\n"
        "    assert 1 == 2\n"
    )
    env = testenv.TestEnv(python=Path(sys.executable), env={}, key="t")
    run = run_pytest(
        env, tree, ["tests"], out_dir=tmp_path / "out", name="r", stream=False
    )
    assert run.returncode == 1
    assert 'tests="2"' in run.junit.read_text() and "1 failed, 1 passed" in (
        run.log.read_text()
    )
    assert not atexit_file.exists()  # the interpreter ended after pytest
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)
