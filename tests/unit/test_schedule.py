# SPDX-License-Identifier: Apache-2.0
"""One schedule for every run of a line's proofs (#35 item 2): real git and
pytest on a two-fix toy line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit.cli import main
from forkkit.services.proof.plan import ProofSpec
from forkkit.services.proof.recipe import RedRecipe
from forkkit.services.proof.schedule import STARTUP, Job, lanes, red_key
from tests.synthetic import (
    SyntheticUpstream,
    count_starts,
    make_two_fix_project,
    toy_testenv_python,
)


def _job(name: str, seconds: float) -> Job:
    targets = (f"tests/{name}.py",)
    spec = ProofSpec(
        fix_id=name,
        targets=targets,
        runtime=(),
        suites=(),
        red=RedRecipe.revert_hunks(name),
        base="base",
        head="head",
    )
    return Job(spec, seconds)


def test_reds_go_longest_first_and_the_files_fill_the_cores_up() -> None:
    reds = [_job("a", 10), _job("b", 40), _job("c", 25)]
    weights = {"f1": 30.0, "f2": 20.0, "f3": 5.0, "f4": 5.0}
    by_core, shards = lanes(reds, list(weights), weights, cores=2)
    assert [[j.name for j in core] for core in by_core] == [["b"], ["c", "a"]]
    # 40 | 35 before the files: f1 to the second core, f2 to the first, ...
    assert shards == [("f2", "f3", "f4"), ("f1",)]
    ends = [
        sum(j.seconds for j in core) + sum(weights[f] for f in shard)
        for core, shard in zip(by_core, shards, strict=True)
    ]
    assert ends == [70, 65]
    # no reds (a guard line): the files alone, one shard per core
    _, alone = lanes([], list(weights), weights, cores=2)
    assert sorted(len(s) for s in alone) == [1, 3]
    assert STARTUP > 0


@pytest.mark.e2e
def test_a_lines_runs_are_packed_ahead_and_each_proof_reads_them(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Both fixes' pairs (red and green) are scheduled together; each
    proof then reads its runs from the command's cache (as runs of this
    command, not cached ones) and classifies as a proof run alone does."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    cfg = make_two_fix_project(
        tmp_path / "p", SyntheticUpstream(tmp_path / "up"), "1.0"
    )
    args = ["--config", str(cfg.path), "red-green", "--fresh", "--no-related"]
    assert main([*args, "--parallel", "off", "--out", str(tmp_path / "alone")]) == 0
    started = count_starts(monkeypatch)
    capsys.readouterr()
    assert main([*args, "--parallel", "on", "--out", str(tmp_path / "ahead")]) == 0
    assert (
        "2 fix(es)' red and green and 0 test file(s) of the related run on 2 cores"
        in (capsys.readouterr().err)
    )
    # each fix's red and green, nothing twice
    ran = len(started)
    assert ran == 4
    for fix in ("limit", "count"):
        docs = [
            json.loads((tmp_path / how / fix / "red_green.json").read_text())
            for how in ("alone", "ahead")
        ]
        assert docs[0]["classification"] == docs[1]["classification"]
        assert docs[1]["valid"] and not docs[1]["red"]["cached"]
        assert not docs[1]["green"]["cached"] and docs[1]["red"]["started_at"] > 0
    # each red's wall time is kept for the next schedule, beside the files'
    (times,) = (tmp_path / "wd" / "timings").glob("*.json")
    kept = json.loads(times.read_text())
    assert kept[red_key(["tests/test_fix.py"])] > 0
    assert kept[red_key(["tests/test_count.py"])] > 0
    # an unchanged rerun: every run from the cache, nothing scheduled
    capsys.readouterr()
    again = [a for a in args if a != "--fresh"]
    assert main([*again, "--parallel", "on", "--out", str(tmp_path / "b")]) == 0
    assert len(started) == ran and "on 2 cores" not in capsys.readouterr().err


@pytest.mark.e2e
def test_an_unchanged_rerun_waits_for_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#35: a rerun whose runs are all in the cache does not sample the
    cores (0.2 s) and looks at the fork tree's uncommitted changes once,
    not once per plan; a dirty tree is still refused."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    cfg = make_two_fix_project(
        tmp_path / "p", SyntheticUpstream(tmp_path / "up"), "1.0"
    )
    args = ["--config", str(cfg.path), "red-green", "--no-related"]
    assert main(args) == 0
    sampled: list[float] = []

    def sample(**kw: float) -> float:
        sampled.append(kw.get("sample_s", 0.0))
        return 0.0

    monkeypatch.setattr("forkkit.services.proof.run.busy_cpus", sample)
    trace = tmp_path / "git.trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    assert main(args) == 0
    assert sampled == []
    statuses = [x for x in trace.read_text().splitlines() if "git status" in x]
    assert len(statuses) == 1, statuses
    # a new run: the cores are sampled for it
    assert main([*args, "--fresh"]) == 0
    assert sampled
    # a dirty tree is refused, however many proofs there are
    (cfg.work.fork / "toy" / "calc.py").write_text("X = 1\n")
    assert main(args) == 2


@pytest.mark.e2e
def test_a_fix_s_green_stands_in_for_its_file_in_the_related_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """#44: each fix's green runs its one test file on HEAD; the related run
    (tests/) takes that very run for the file instead of running it again,
    and classifies as a related run made whole does."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    cfg = make_two_fix_project(
        tmp_path / "p", SyntheticUpstream(tmp_path / "up"), "1.0"
    )
    args = ["--config", str(cfg.path), "red-green", "--fresh"]
    assert main([*args, "--parallel", "off", "--out", str(tmp_path / "off")]) == 0
    # count's pair is the long one: it takes the first core alone, and the
    # related run's one shard goes to the second core, so the first lane
    # leaves a gap in the shards' numbers (stop 48's CI: a stand-in was
    # named into it and wrote over that shard's JUnit)
    (timings,) = (tmp_path / "wd" / "timings").glob("*.json")
    times = json.loads(timings.read_text())
    times |= {"red tests/test_count.py": 100.0, "red tests/test_fix.py": 1.0}
    timings.write_text(json.dumps(times))
    started = count_starts(monkeypatch)
    capsys.readouterr()
    assert main([*args, "--parallel", "on", "--out", str(tmp_path / "on")]) == 0
    err = capsys.readouterr().err
    assert "(2 more from the fixes' greens)" in err, err
    # two pairs, and test_other.py: the two fix files are not run again
    assert len(started) == 5, [c[-1] for c in started]
    for fix in ("limit", "count"):
        off, on = (
            json.loads((tmp_path / how / fix / "red_green.json").read_text())
            for how in ("off", "on")
        )
        assert on["valid"] and on["classification"] == off["classification"]
        assert on["related"]["counts"] == off["related"]["counts"]
        assert on["related_regressions"] == off["related_regressions"] == []
