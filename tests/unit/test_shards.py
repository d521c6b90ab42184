# SPDX-License-Identifier: Apache-2.0
"""The fix run packed onto two cores (``testing/shards.py``,
``services/proof/packed.py``): the cut into test files, the packing, and a
packed proof on the toy project that classifies as the whole run does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.services.proof.run import prove
from forkkit.testing.junit import parse_junit_text
from forkkit.testing.shards import Timings, merge_junit, split, units, weigh

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
        "tests/test_d.py",
        "tests/test_d.py::test_x",
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
    toy_project: ForkConfig, tmp_path: Path
) -> None:
    """Red then shard 1 on one core, shard 2 on the other: the same
    classification and the same outcome of every test as one whole run, and
    an unchanged rerun comes whole from the cache."""
    tree = materialize(toy_project)
    whole = prove(toy_project, tree, out_dir=tmp_path / "whole", fresh=True)
    # no times yet: both test files weigh the same, one shard each
    (toy_project.work.root / "timings.json").unlink()
    out = tmp_path / "packed"
    packed = prove(toy_project, tree, out_dir=out, fresh=True, parallel=True)
    assert (out / "red_green_related-1.xml").is_file()
    assert (out / "red_green_related-2.xml").is_file()
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
    again = prove(toy_project, tree, out_dir=tmp_path / "again", parallel=True)
    assert again.related is not None and again.related.cached and again.red.cached
    assert not (tmp_path / "again" / "red_green_related-1.xml").exists()
    assert Timings(toy_project.work.root / "timings.json").load()


def test_measured_times_override_the_committed_seed(tmp_path: Path) -> None:
    seed = tmp_path / "test_durations.json"
    seed.write_text('{"tests/test_a.py": 9.0, "tests/sub": 4.0}\n')
    timings = Timings(tmp_path / "wd" / "timings.json", seed=seed)
    assert timings.load() == {"tests/test_a.py": 9.0, "tests/sub": 4.0}
    timings.update({"tests/sub": 2.5})
    assert timings.load() == {"tests/test_a.py": 9.0, "tests/sub": 2.5}
    assert "test_a" not in timings.path.read_text()  # the seed is not copied
