# SPDX-License-Identifier: Apache-2.0
"""Red/green in the fewest runs, with one result cache (real git and pytest)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.services.proof.run import prove
from forkkit.services.rebase.run import Options, rebase, resolve_target
from forkkit.services.reconcile.run import reconcile
from forkkit.testing import env as testenv
from forkkit.testing import pytest_run
from forkkit.testing.cache import ResultCache, ResultKey
from forkkit.testing.importdigest import content_digest, forget, signature
from tests.synthetic import (
    CALC_FIXED_BY_DECORATOR,
    RECON_BASE,
    RECON_DISJOINT,
    RECON_OURS,
    SyntheticUpstream,
    count_starts,
    make_project,
    toy_release,
    toy_testenv_python,
    write_patch,
)

FOCUSED = ("tests/test_fix.py", "tests/test_other.py")


def _key(**changes: Any) -> ResultKey:
    base = ResultKey(
        tree="t" * 40,
        env_key="e",
        python="/py",
        environ={"A": "1"},
        pytest_args=("-k", "x"),
        deselect=("tests/a.py::t",),
        targets=("tests",),
    )
    return dataclasses.replace(base, **changes)


def test_key_changes_with_every_part() -> None:
    same = _key().digest()
    assert same == _key().digest() and len(same) == 64
    changes: list[dict[str, Any]] = [
        {"tree": "u" * 40},
        {"env_key": "f"},
        {"python": "/other"},
        {"environ": {"A": "2"}},
        {"environ": {"A": "1", "B": ""}},
        {"pytest_args": ("-k", "y")},
        {"deselect": ()},
        {"deselect": ("tests/a.py::t", "tests/b.py::u")},
        {"targets": ("tests", "tests/test_fix.py")},
        {"imports": "p" * 64},
    ]
    for change in changes:
        assert _key(**change).digest() != same, change


def test_cache_stores_and_returns_the_junit_and_log(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path / "results")
    junit, log = tmp_path / "r.xml", tmp_path / "r.log"
    junit.write_text("<testsuite/>")
    log.write_text("1 passed\n")
    run = pytest_run.PytestRun(("t",), 0, junit, log, 2.5, "python -m pytest t")
    key = _key()
    assert cache.get(key) is None
    cache.put(key, run)
    hit = cache.get(key)
    assert hit is not None
    assert (
        hit.junit.read_text() == "<testsuite/>" and hit.log.read_text() == "1 passed\n"
    )
    assert hit.seconds == 2.5 and hit.returncode == 0
    assert cache.get(_key(deselect=())) is None


@pytest.mark.parametrize(
    "damage",
    ["edit-junit", "truncate-log", "delete-junit", "unrecorded"],
)
def test_an_entry_that_does_not_hold_what_it_stored_is_a_miss(
    tmp_path: Path, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An edited JUnit must not feed a proof; a missing one must not crash
    every later run; an entry without digests (older format) is not trusted."""
    cache = ResultCache(tmp_path / "results")
    junit, log = tmp_path / "r.xml", tmp_path / "r.log"
    junit.write_text('<testsuite><testcase name="t"><failure/></testcase></testsuite>')
    log.write_text("1 failed\n")
    run = pytest_run.PytestRun(("t",), 1, junit, log, 2.5, "python -m pytest t")
    key = _key()
    cache.put(key, run)
    hit = cache.get(key)
    assert hit is not None
    if damage == "edit-junit":
        hit.junit.write_text(hit.junit.read_text().replace("<failure/>", ""))
    elif damage == "truncate-log":
        hit.log.write_text("")
    elif damage == "delete-junit":
        hit.junit.unlink()
    else:
        meta = hit.junit.parent / "run.json"
        doc = json.loads(meta.read_text())
        del doc["sha256"]
        meta.write_text(json.dumps(doc))
    capsys.readouterr()
    assert cache.get(key) is None
    assert capsys.readouterr().err.count("does not hold what it stored") == 1
    cache.put(key, run)  # the next run replaces it
    assert cache.get(key) is not None


@pytest.mark.contract
def test_key_covers_what_the_interpreter_imports_and_the_runs_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 33, 3: a .pth file plus a bare module in site-packages (no
    dist-info) is a miss, and so is a package upgraded in place; the
    caller's PYTHONWARNINGS, PYTHONOPTIMIZE, PYTHONHASHSEED or PYTEST_ADDOPTS
    never reach a run, so they leave the key alone, until the caller names
    one to pass."""
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True
    )
    python = venv / "bin" / "python"
    site = next((venv / "lib").glob("python3*/site-packages"))
    for var in ("PYTEST_ADDOPTS", testenv.PASS_ENV):
        monkeypatch.delenv(var, raising=False)
    store = tmp_path / "venv.digest.json"
    env = testenv.TestEnv(python=python, env={}, key="external", store=store)

    def digest() -> str:
        forget()
        return ResultKey.of(env, "t" * 40, ["tests"], pytest_args=()).digest()

    first = digest()
    assert digest() == first and json.loads(store.read_text())["content"]
    caller = {
        "PYTHONWARNINGS": "error",
        "PYTHONOPTIMIZE": "2",
        "PYTHONHASHSEED": "1",
        "PYTEST_ADDOPTS": "-x",
        "SOMETHING_ELSE": "1",
    }
    for var, value in caller.items():
        monkeypatch.setenv(var, value)
    assert digest() == first
    assert not set(caller) & set(env.environ(tmp_path))  # none reaches a run
    (site / "zz_hook.pth").write_text("import zz_cheat\n")
    (site / "zz_cheat.py").write_text("X = 1\n")
    hooked = digest()
    assert hooked != first
    (site / "zz_cheat.py").write_text("X = 2\n")  # same size, new content
    os.utime(site / "zz_cheat.py", ns=(1, 1))
    edited = digest()
    assert edited != hooked
    monkeypatch.setenv(testenv.PASS_ENV, "PYTEST_ADDOPTS")
    assert env.environ(tmp_path)["PYTEST_ADDOPTS"] == "-x"
    assert digest() != edited
    named = dataclasses.replace(env, passed=("PYTHON*",))
    monkeypatch.delenv(testenv.PASS_ENV)
    assert named.environ(tmp_path)["PYTHONWARNINGS"] == "error"


def test_import_digest_is_kept_and_trusted_while_no_file_changed(
    tmp_path: Path,
) -> None:
    """The content is hashed once; a kept digest stands while the stat
    signature holds, and a changed file makes it hash again."""
    root = tmp_path / "site"
    root.mkdir()
    (root / "a.py").write_text("A = 1\n")
    sig = signature([str(root)])
    assert sig == signature([str(root)])
    content = content_digest([str(root)])
    (root / "a.py").write_text("A = 2\n")
    assert signature([str(root)]) != sig
    assert content_digest([str(root)]) != content


def test_a_rehash_reads_only_the_files_that_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a change to the test env (a package installed), only what
    changed is read again: the other files' digests are kept by their stat
    (size, mtime, ctime, inode); an edit in place with the same size and
    the mtime set back is still read, since its ctime moved."""
    from forkkit.testing import importdigest

    root = tmp_path / "site"
    root.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (root / name).write_text(f"{name} = 1\n")
    known: importdigest.Known = {}
    first = content_digest([str(root)], known)
    assert sorted(Path(p).name for p in known) == ["a.py", "b.py", "c.py"]
    read: list[str] = []
    real = importdigest._read_digest

    def counted(path: str) -> str:
        read.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(importdigest, "_read_digest", counted)
    assert content_digest([str(root)], known) == first and read == []
    before = (root / "b.py").stat()
    (root / "b.py").write_text("b.py = 2\n")  # same size
    os.utime(root / "b.py", ns=(before.st_atime_ns, before.st_mtime_ns))
    (root / "d.py").write_text("new\n")
    changed = content_digest([str(root)], known)
    assert sorted(read) == ["b.py", "d.py"]
    assert changed != first
    assert changed == content_digest([str(root)])  # as a full hash says


def test_the_kept_digest_is_read_without_the_files_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-file entries (about 100,000 of them for a vLLM venv) are kept
    beside the digest and read only for a rehash: an unchanged rerun reads
    the small store alone."""
    from forkkit.testing import importdigest

    root = tmp_path / "site"
    root.mkdir()
    (root / "a.py").write_text("A = 1\n")
    monkeypatch.setattr(importdigest, "import_roots", lambda _: (str(root),))
    store = tmp_path / "venv.digest.json"
    first = importdigest._taken(Path("python"), store)
    entries = tmp_path / "venv.digest.files.json"
    assert "files" not in json.loads(store.read_text())
    assert list(json.loads(entries.read_text())["files"]) == [str(root / "a.py")]
    opened: list[str] = []
    real = importdigest._read

    def counted(path: Path) -> dict[str, object]:
        opened.append(path.name)
        return real(path)

    monkeypatch.setattr(importdigest, "_read", counted)
    assert importdigest._taken(Path("python"), store) == first
    assert opened == [store.name]
    (root / "b.py").write_text("B = 1\n")
    assert importdigest._taken(Path("python"), store) != first
    assert opened[1:] == [store.name, entries.name]


@pytest.mark.e2e
def test_fix_runs_once_with_related_suites(
    toy_project: ForkConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = materialize(toy_project)
    started = count_starts(monkeypatch)
    result = prove(Line.of(toy_project), tree, out_dir=tmp_path / "r", stream=False)
    assert result.valid, result.problems
    # red and green: the same invocation of the focused tests; then the
    # related suites, a run of their own (#44)
    assert len(started) == 3, started
    assert started[0] == started[1]  # the same command line, only the tree differs
    assert started[2][-1:] == ["tests"]
    assert result.related is not None
    assert result.green.run.log != result.related.run.log
    assert result.related.counts()["passed"] == 3
    assert result.green.counts() == {
        "passed": 1,
        "failed": 0,
        "error": 0,
        "skipped": 0,
        "collection_errors": 0,
    }
    assert (tmp_path / "r" / "red_green_green.xml").is_file()  # JUnit per run


@pytest.mark.e2e
def test_classification_is_the_same_with_and_without_related(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg = make_project(tmp_path / "proj", toy_upstream, "1.0")
    tree = materialize(cfg)
    docs = []
    for related, out in ((True, "a"), (False, "b")):
        prove(
            Line.of(cfg),
            tree,
            tests=list(FOCUSED),
            related=related,
            out_dir=tmp_path / out,
            stream=False,
        )
        docs.append(json.loads((tmp_path / out / "red_green.json").read_text()))
    with_related, alone = (d["classification"] for d in docs)
    assert with_related == alone
    assert with_related["FAIL_TO_PASS"] == ["tests/test_fix.py::test_limit_reaches_n"]
    assert sorted(with_related["PASS_TO_PASS"]) == [
        "tests/test_other.py::test_double",
        "tests/test_other.py::test_name",
    ]
    assert docs[0]["related"] is not None and docs[1]["related"] is None


@pytest.mark.e2e
def test_rerun_with_nothing_changed_is_cached(
    toy_project: ForkConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = materialize(toy_project)
    first = prove(Line.of(toy_project), tree, out_dir=tmp_path / "a", stream=False)
    assert first.valid and not first.red.cached and not first.green.cached
    started = count_starts(monkeypatch)
    again = prove(Line.of(toy_project), tree, out_dir=tmp_path / "b", stream=False)
    assert started == []  # nothing ran
    assert again.valid and again.red.cached and again.green.cached
    assert again.related is not None and again.related.cached
    data = json.loads((tmp_path / "b" / "red_green.json").read_text())
    assert data["red"]["cached"] is True and data["related"]["cached"] is True
    assert (
        data["classification"]
        == json.loads((tmp_path / "a" / "red_green.json").read_text())["classification"]
    )
    assert "cached" in (tmp_path / "b" / "red_green.md").read_text()
    assert (tmp_path / "b" / "red_green_red.xml").is_file()
    assert (tmp_path / "b" / "red_green_red.log").is_file()
    fresh = prove(
        Line.of(toy_project), tree, out_dir=tmp_path / "c", stream=False, fresh=True
    )
    assert len(started) == 3 and not fresh.red.cached and not fresh.green.cached
    assert fresh.related is not None and not fresh.related.cached


@pytest.mark.e2e
def test_cache_misses_when_deselect_or_targets_change(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    tree = materialize(toy_project)
    env = testenv.TestEnv(python=Path(sys.executable), env={}, key="toy")
    prove(Line.of(toy_project), tree, env=env, out_dir=tmp_path / "a", stream=False)
    other = dataclasses.replace(env, deselect=("tests/test_other.py::test_name",))
    r = prove(
        Line.of(toy_project), tree, env=other, out_dir=tmp_path / "b", stream=False
    )
    assert not r.red.cached and r.related is not None and not r.related.cached
    assert r.related.counts()["passed"] == 2
    r = prove(
        Line.of(toy_project),
        tree,
        env=env,
        tests=["tests/test_fix.py::test_limit_reaches_n"],
        out_dir=tmp_path / "c",
        stream=False,
    )
    assert not r.red.cached


@pytest.mark.e2e
def test_cli_fresh_flag(toy_project: ForkConfig, tmp_path: Path) -> None:
    src = str(Path(__file__).parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    cmd = [sys.executable, "-m", "forkkit", "--config", str(toy_project.path)]
    cmd += ["red-green", "--no-related"]
    first = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    second = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert second.returncode == 0 and "cached" in second.stdout
    third = subprocess.run([*cmd, "--fresh"], env=env, capture_output=True, text=True)
    assert third.returncode == 0, third.stderr
    assert "cached" not in third.stdout


@pytest.mark.e2e
def test_rebase_reuses_runs_from_the_result_cache(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    toy_upstream.publish("1.1", toy_release({"toy/calc.py": CALC_FIXED_BY_DECORATOR}))
    target = resolve_target(Line.of(toy_project), "toy==1.1")
    first = rebase(Line.of(toy_project), target, Options(red_green=False))
    assert list(toy_project.work.results.glob("*/*/junit.xml"))
    capfd.readouterr()
    started = count_starts(monkeypatch)
    again = rebase(Line.of(toy_project), target, Options(red_green=False))
    assert started == [] and "(cached: same tree" in capfd.readouterr().err
    assert [p.status for p in again.patches] == [p.status for p in first.patches]


@pytest.mark.e2e
def test_reconcile_stores_its_runs_in_the_result_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    up = SyntheticUpstream(tmp_path / "upstream")
    up.publish("1.0", RECON_BASE)
    ours = [("[Bugfix] limit reaches n", RECON_OURS)]
    cfg = make_project(tmp_path / "project", up, "1.0", ours)
    patch = write_patch(RECON_BASE, RECON_DISJOINT, tmp_path / "greet.patch")
    reconcile(Line.of(cfg), str(patch))
    stored = list(cfg.work.results.glob("*/*/run.json"))
    # the one result cache, not the old reconcile/runs folder of its own
    assert stored and not (cfg.workdir / "reconcile" / "runs").exists()
    meta = json.loads(stored[0].read_text())
    assert "--continue-on-collection-errors" in meta["key"]["pytest_args"]
    again = reconcile(Line.of(cfg), str(patch))[0]
    assert all(c.cached for c in again.cells.values() if c.status == "ran")


@pytest.mark.e2e
def test_bench_compares_with_the_manual_recipe_on_the_toy(
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    bench = Path(__file__).parents[2] / "benchmarks" / "red_green_bench.py"
    src = str(Path(__file__).parents[2] / "src")
    env = {**os.environ, "PYTHONPATH": src}
    numbers = tmp_path / "bench.json"
    cmd = [sys.executable, str(bench), "--config", str(toy_project.path)]
    proc = subprocess.run(
        [*cmd, "--repeat", "1", "--json", str(numbers)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Load average before: " in proc.stdout
    # forkkit's classification is checked against the recipe's own runs
    assert "toy-fix 1/0): each of the 1 rounds of forkkit gives the same" in (
        proc.stdout
    )
    data = json.loads(numbers.read_text())
    assert data["classification_differs_in_rounds"] == []
    assert set(data["wall"]) == {
        "manual recipe (git restore; pytest: a red per fix, green, related)",
        "forkkit red-green --fresh",
        "forkkit red-green (cached rerun)",
    }
