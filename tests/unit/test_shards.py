# SPDX-License-Identifier: Apache-2.0
"""The fix run packed onto two cores (``testing/shards.py``,
``services/proof/packed.py``): the cut into test files, the packing, and a
packed proof on the toy project that classifies as the whole run does."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from forkkit.config import ForkConfig, load_config
from forkkit.fork.fixes import load_fixes
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.services.proof.packed import packable_args
from forkkit.services.proof.run import project_timings, prove
from forkkit.testing.forkruns import SuiteRun
from forkkit.testing.junit import parse_junit_text
from forkkit.testing.pytest_run import PytestRun
from forkkit.testing.shards import (
    SEED_FILE,
    Timings,
    merge_junit,
    merged,
    split,
    units,
    weigh,
)
from forkkit.vcs import Repo

FILES = frozenset(
    {
        "tests/__init__.py",
        "tests/conftest.py",
        "tests/utils.py",
        "tests/test_a.py",
        "tests/b_test.py",
        "tests/sub/test_c.py",
        "tests/test_d.py",
    }
)


def reader(texts: dict[str, str]):  # type: ignore[no-untyped-def]
    return texts.get


def test_a_plain_directory_is_cut_into_its_test_files_and_subfolders() -> None:
    got = units(
        ["tests", "tests/test_d.py::test_x"],
        files=FILES,
        read=reader({"tests/conftest.py": "import pytest\n"}),
    )
    assert got == [
        "tests/b_test.py",
        "tests/sub",
        "tests/test_a.py",
        "tests/test_d.py",  # its node id goes: this unit runs it
    ]


@pytest.mark.parametrize(
    "texts",
    [
        {"tests/conftest.py": "collect_ignore = ['test_a.py']\n"},
        {"conftest.py": "def pytest_ignore_collect(collection_path): ...\n"},
        {"pytest.ini": "[pytest]\npython_files = c_*.py\n"},
    ],
    ids=["collect_ignore", "ignore hook above", "python_files"],
)
def test_a_directory_whose_collection_is_changed_stays_whole(
    texts: dict[str, str],
) -> None:
    assert units(["tests"], files=FILES, read=reader(texts)) == ["tests"]


def test_split_packs_longest_first_and_keeps_the_order() -> None:
    parts = ["a", "b", "c", "d", "e"]
    weights = {"a": 10.0, "b": 80.0, "c": 70.0, "d": 40.0}  # e: the mean, 50
    shards = split(parts, weights, n=2)
    assert sorted(shards) == [("a", "b", "d"), ("c", "e")]  # 130 and 120
    # red's 60 s already on the first core: it gets less of the rest
    first, second = split(parts, weights, n=2, preload=(60.0, 0.0))
    assert sum(weights.get(p, 50.0) for p in first) < sum(
        weights.get(p, 50.0) for p in second
    )
    assert split(["a"], weights, n=2) == [("a",)]


def test_weigh_and_merge_junit() -> None:
    one = (
        '<testsuites><testsuite name="pytest" time="3">'
        '<testcase classname="tests.test_a" name="t1" time="1.5"/>'
        '<testcase classname="tests.test_a.TestK" name="t2" time="0.5"/>'
        "</testsuite></testsuites>"
    )
    two = (
        '<testsuite name="pytest" time="2">'
        '<testcase classname="tests.sub.test_c" name="t3" time="2"/></testsuite>'
    )
    report = parse_junit_text(merge_junit([one, two]))
    assert len(report.tests) == 3 and report.seconds == 5.0
    assert weigh(["tests/test_a.py", "tests/sub", "tests/x.py"], report) == {
        "tests/test_a.py": 2.0,
        "tests/sub": 2.0,
    }


def test_timings_survive_a_damaged_file(tmp_path: Path) -> None:
    timings = Timings(tmp_path / "timings.json")
    timings.path.write_text("{not json")
    assert timings.load() == {}
    timings.update({"tests/test_a.py": 1.25})
    timings.update({"tests/sub": 2.0})
    assert timings.load() == {"tests/test_a.py": 1.25, "tests/sub": 2.0}


@pytest.mark.e2e
def test_a_packed_proof_classifies_as_the_whole_run(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fix's red and green then shard 1 on one core, shard 2 on the
    other: the same classification and the same outcome of every test as
    one whole run, and an unchanged rerun comes whole from the cache."""
    tree = materialize(toy_project)
    whole = prove(Line.of(toy_project), tree, out_dir=tmp_path / "whole", fresh=True)
    # the pair (two runs of the fix's file) on the first core, test_other.py
    # on the second
    timings = project_timings(Line.of(toy_project), tree)
    timings.path.unlink()
    timings.update({"tests/test_fix.py": 1.0, "tests/test_other.py": 10.0})
    out = tmp_path / "packed"
    packed = prove(Line.of(toy_project), tree, out_dir=out, fresh=True, parallel=True)
    assert (out / "red_green_related-1.xml").is_file()
    assert (out / "red_green_related-2.xml").is_file()
    # the shard runs the fix (HEAD) in a checkout of its own; the fix's green
    # (tests/test_fix.py, whole and alone, on HEAD) stands in for that file
    said = capsys.readouterr().err
    assert f"red_green_related-1: HEAD {tree.head[:12]}, checked out in " in said
    assert "1 file(s) from the fix's green" in said
    assert "red_green_related-2: run by this command already" in said
    shards = json.loads((out / "red_green.json").read_text())["related"]["shards"]
    assert [s["name"] for s in shards] == ["red_green_related-1", "red_green_related-2"]
    assert all(s["started_at"] > 0 and (out / s["junit"]).is_file() for s in shards)
    assert packed.valid and whole.valid
    assert packed.classification == whole.classification
    assert packed.related is not None and whole.related is not None
    assert packed.related.report is not None and whole.related.report is not None
    assert {t: o.outcome for t, o in packed.related.report.tests.items()} == {
        t: o.outcome for t, o in whole.related.report.tests.items()
    }
    again = prove(Line.of(toy_project), tree, out_dir=tmp_path / "again", parallel=True)
    assert again.related is not None and again.related.cached and again.red.cached
    assert not (tmp_path / "again" / "red_green_related-1.xml").exists()
    assert project_timings(Line.of(toy_project), tree).load()
    assert project_timings(Line.of(toy_project), tree).path.name == "toy_1.0.json"


def test_measured_times_override_the_committed_seed(tmp_path: Path) -> None:
    seed = tmp_path / "test_durations.json"
    seed.write_text('{"tests/test_a.py": 9.0, "tests/sub": 4.0}\n')
    timings = Timings(tmp_path / "wd" / "timings.json", seed=seed)
    assert timings.load() == {"tests/test_a.py": 9.0, "tests/sub": 4.0}
    timings.update({"tests/sub": 2.5})
    assert timings.load() == {"tests/test_a.py": 9.0, "tests/sub": 2.5}
    assert "test_a" not in timings.path.read_text()  # the seed is not copied


@pytest.mark.parametrize(
    ("extra", "special"),
    [
        ({"tests/build/test_b.py"}, set()),  # norecursedirs: the whole run skips it
        ({"tests/.hidden/test_h.py"}, set()),
        ({"tests/env/pyvenv.cfg", "tests/env/test_v.py"}, set()),  # a virtualenv
        ({"tests/sub/pytest.ini"}, set()),  # a config its shard would pick up
        (set(), {"tests/linked"}),  # a symlink or submodule
    ],
    ids=["build", "hidden", "venv", "config", "symlink"],
)
def test_a_directory_that_would_collect_otherwise_stays_whole(
    extra: set[str], special: set[str]
) -> None:
    got = units(
        ["tests"],
        files=FILES | extra,
        read=reader({}),
        special=frozenset(special),
    )
    assert got == ["tests"]


def test_doctest_files_are_units_and_covered_units_go() -> None:
    files = FILES | {"tests/test_notes.txt", "tests/notes.txt"}
    got = units(["tests", "tests/test_a.py::test_x"], files=files, read=reader({}))
    assert "tests/test_notes.txt" in got and "tests/notes.txt" not in got
    assert "tests/test_a.py::test_x" not in got  # tests/test_a.py runs it


@pytest.mark.parametrize(
    ("args", "ok"),
    [
        ([], True),
        (["-k", "mamba and not slow", "-q", "-rfE", "--tb=short"], True),
        (["-m", "cpu_test", "-W", "ignore", "-p", "no:randomly", "-s"], True),
        (["--deselect", "tests/test_a.py::t", "-kfoo", "-pno:x"], True),
        (["-x"], False),
        (["--maxfail=2"], False),
        (["--ignore", "tests/sub"], False),
        (["-p", "xdist"], False),
        (["-sw"], False),  # --stepwise, not -s
        (["-k"], False),  # no value
    ],
)
def test_only_per_test_pytest_options_are_packed(args: list[str], ok: bool) -> None:
    assert packable_args(args) is ok


def test_a_merged_run_exits_as_the_whole_run(tmp_path: Path) -> None:
    def run(name: str, code: int) -> SuiteRun:
        junit, log = tmp_path / f"{name}.xml", tmp_path / f"{name}.log"
        junit.write_text('<testsuite name="pytest" time="1"/>')
        log.write_text(f"{name}\n")
        ran = PytestRun((name,), code, junit, log, 1.0, "pytest", started=5.0)
        return SuiteRun(name, "r", "t", ran, parse_junit_text(junit.read_text()))

    def code(*codes: int) -> int:
        runs = [run(f"s{i}", c) for i, c in enumerate(codes)]
        return merged(runs, name="w", targets=["t"], out_dir=tmp_path).run.returncode

    assert code(5, 0) == 0  # one shard had nothing to collect
    assert code(5, 1) == 1 and code(0, 1) == 1 and code(5, 5) == 5
    assert code(5, 2) == 2


def test_tree_listing_names_files_as_they_are(tmp_path: Path) -> None:
    """``ls-tree -z``: a non-ASCII name is not quoted (a quoted one would be
    a target no file has)."""
    repo = Repo.init(tmp_path / "r")
    (repo.path / "tests").mkdir()
    (repo.path / "tests" / "test_caf\u00e9.py").write_text("def test_x(): pass\n")
    (repo.path / "link").symlink_to("tests")
    for args in (["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(repo.path), *args], check=True)
    modes = repo.ls_tree_modes("HEAD", [])
    assert modes["tests/test_caf\u00e9.py"][0] == "100644"
    assert modes["link"][0] == "120000"


def test_every_line_of_the_project_has_its_packing_seed() -> None:
    """A fresh clone (CI) packs each line's reds and run on the fix by the
    durations committed beside the line's fork.toml. Without them every file
    weighs the same, and the 0.30 line's run on the fix went as one process
    beside the reds: one core idle for two minutes of the main job."""
    project = load_config(Path(__file__).parents[2] / "fork.toml")
    for line in [project, *(load_config(p) for p in project.also)]:
        seed = json.loads((line.root / SEED_FILE).read_text())
        # the run on the fix packs by its files' times (not the reds')
        files = {k.split("::")[0] for k in seed if not k.startswith("red ")}
        for suite in load_fixes(line).related_suites:
            assert any(f == suite or f.startswith(f"{suite}/") for f in files), (
                f"{line.root / SEED_FILE}: no measured time for {suite}"
            )
