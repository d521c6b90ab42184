# SPDX-License-Identifier: Apache-2.0
"""The one test-run service (testing/service.py): a spec, a workspace, the
result cache around the run and a rerun policy (real pytest subprocesses)."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path

from forkkit.testing import env as testenv
from forkkit.testing import service
from forkkit.testing.cache import ResultCache
from forkkit.testing.pytest_run import PytestRun
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
