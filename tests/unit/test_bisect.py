# SPDX-License-Identifier: Apache-2.0
"""``forkkit bisect`` (#32 item 5): the upstream commit that absorbed a fix,
found with O(log n) real proofs on a synthetic upstream of many commits."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from forkkit.cli import main
from forkkit.config import ForkConfig, load_config
from forkkit.patches.retired import (
    RETIRED_FILE,
    Retired,
    parse_retired,
    render_retired,
)
from forkkit.services.bisect.model import Step, first_absorbed, pr_number
from tests.synthetic import (
    BUGGY,
    CALC_CONTEXT_MOVED,
    COUNT_FIXED,
    FIX_TEST,
    FIXED_CALC,
    SyntheticUpstream,
    git_line_toml,
    make_project,
    make_two_fix_project,
    toy_release,
    toy_testenv_python,
)


def _report(cfg: ForkConfig) -> Any:
    """The one fix's entry of the bisect report."""
    path = cfg.workdir / "reports" / "bisect" / "bisect.json"
    (entry,) = json.loads(path.read_text())["fixes"]
    return entry


def _step(commit: str, absorbed: bool) -> Step:
    return Step(commit=commit, subject="", absorbed=absorbed, passed=(), failed=())


@pytest.mark.parametrize("n", [1, 2, 3, 7, 31, 32, 33, 100])
def test_the_search_names_the_first_absorbing_commit_in_log_n_proofs(n: int) -> None:
    commits = [f"c{i}" for i in range(n)]
    for first in range(n):
        proved: list[str] = []

        def probe(commit: str, first: int = first, proved: list[str] = proved) -> Step:
            proved.append(commit)
            return _step(commit, commits.index(commit) >= first)

        found = first_absorbed(commits, probe)
        assert found.index == first and [s.commit for s in found.steps] == proved
        assert len(proved) <= 1 + math.ceil(math.log2(n)) if n > 1 else len(proved) == 1


def test_nothing_absorbed_costs_one_proof() -> None:
    found = first_absorbed(["a", "b", "c"], lambda c: _step(c, False))
    assert found.index is None and [s.commit for s in found.steps] == ["c"]


def test_a_commit_that_cannot_be_measured_is_skipped() -> None:
    """git bisect skip: the nearest measurable neighbour is proven instead,
    and the unmeasured commits right before the answer are named."""
    commits = [f"c{i}" for i in range(8)]

    def probe(commit: str) -> Step:
        i = commits.index(commit)
        step = _step(commit, i >= 5)
        return replace(step, broken="x") if i in (3, 4) else step

    found = first_absorbed(commits, probe)
    assert found.index == 5 and found.unmeasured == (3, 4)
    assert [s.commit for s in found.steps] == ["c7", "c3", "c2", "c4", "c5"]


def test_an_unmeasured_head_is_searched_below_and_named() -> None:
    """The newest commits cannot be measured: the ones before them are
    proven; where the fix is still needed there, the unmeasured ones after
    it are named (the fix may have been taken in them)."""
    commits = [f"c{i}" for i in range(6)]

    def probe(commit: str) -> Step:
        i = commits.index(commit)
        return (
            replace(_step(commit, False), broken="x")
            if i >= 4
            else _step(commit, i >= 2)
        )

    found = first_absorbed(commits, probe)
    assert found.index == 2 and [s.commit for s in found.steps][:3] == [
        "c5",
        "c4",
        "c3",
    ]
    carried = first_absorbed(
        commits,
        lambda c: (
            replace(_step(c, False), broken="x")
            if c in ("c4", "c5")
            else _step(c, False)
        ),
    )
    assert carried.index is None and carried.unmeasured == (4, 5)


def test_pr_numbers_from_subjects() -> None:
    assert pr_number("[Bugfix] keep the checkpoint (#57180)") == 57180
    assert pr_number("Merge pull request #12 from a/b") == 12
    assert pr_number("[Core] no number here") is None
    assert pr_number("see #12 for context") is None


@pytest.mark.e2e
def test_bisect_names_the_commit_of_33_that_absorbed_the_fix(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Done when (#32): a synthetic upstream of at least 32 commits, the exact
    commit in at most 6 proofs, with its subject and PR number."""
    git_line_toml(toy_project, toy_upstream, commit=toy_upstream.rev("1.0"))
    cfg = load_config(toy_project.path)
    pushed = []
    for i in range(33):
        if i == 21:
            files, subject = {"toy/calc.py": FIXED_CALC}, "[Bugfix] limit is n (#4242)"
        elif i == 5:
            files, subject = {"toy/calc.py": CALC_CONTEXT_MOVED}, "Type double"
        else:
            files, subject = {f"docs/note{i}.md": f"{i}\n"}, f"[Doc] note {i}"
        pushed.append(toy_upstream.push_commit(subject, files))
    assert main(["--config", str(cfg.path), "bisect"]) == 0
    out = capsys.readouterr().out
    assert f"absorbed by {pushed[21][:12]} (#4242)" in out
    data = _report(cfg)
    assert data["first"]["commit"] == pushed[21] and data["pr"] == 4242
    assert data["commits"] == 33 and data["proofs"] <= 6
    assert data["fail_to_pass"] == ["tests.test_fix::test_limit_reaches_n"]
    assert data["applied_upstream"] == f"{pushed[21][:12]} (#4242)"
    md = (cfg.workdir / "reports" / "bisect" / "bisect.md").read_text()
    assert str(cfg.workdir.parent) not in md  # no local path in a PR's text
    # before the absorbing commit the fix is still needed: exit 1, one proof
    args = ["bisect", "--bad", pushed[20]]
    assert main(["--config", str(cfg.path), *args]) == 1
    assert "still needed at" in capsys.readouterr().out


@pytest.mark.e2e
def test_bisect_with_the_tests_another_line_carries(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Upstream renames the helper the pin's test calls, then fixes it: the
    pin's test text breaks on the new commits (an ImportError proves nothing),
    the text a newer line carries (refreshed for the rename) finds the fix."""
    git_line_toml(toy_project, toy_upstream, commit=toy_upstream.rev("1.0"))
    cfg = load_config(toy_project.path)
    renamed = BUGGY["toy/calc.py"].replace("def limit(", "def cap(")
    rename = toy_upstream.push_commit("[Core] limit is cap", {"toy/calc.py": renamed})
    fixed = renamed.replace("return n - 1", "return n")
    fix = toy_upstream.push_commit("[Bugfix] cap is n (#77)", {"toy/calc.py": fixed})
    later = toy_upstream.push_commit("[Doc] a note", {"docs/n.md": "n\n"})
    assert main(["--config", str(cfg.path), "bisect"]) == 1  # the pin's text
    assert f"tests prove nothing at {later[:12]}" in capsys.readouterr().out
    # a newer line, over a release with the fix, carries the refreshed test
    toy_upstream.publish("2.0", toy_release({"toy/calc.py": fixed}))
    refreshed = FIX_TEST.replace("import limit", "import cap as limit")
    newer = make_project(
        tmp_path / "newer",
        toy_upstream,
        "2.0",
        [("[Tests] limit reaches n", {"tests/test_fix.py": refreshed})],
    )
    args = ["bisect", "--tests-from", str(newer.path), "--bad", later]
    assert main(["--config", str(cfg.path), *args]) == 0
    assert f"absorbed by {fix[:12]} (#77)" in capsys.readouterr().out
    data = _report(cfg)
    assert data["first"]["commit"] == fix and data["steps"][0]["commit"] == later
    assert data["tests_from"] == "../newer/fork.toml" and rename not in (
        s["commit"] for s in data["steps"] if s["absorbed"]
    )


@pytest.mark.e2e
def test_bisect_over_releases_names_the_release(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Over releases (#32 item 5): each release after the pin, verified by
    its sha256 on the index, is one commit; the answer is the first release
    without the need, as patches/retired.toml records it."""
    toy_upstream.publish("1.1", toy_release({"toy/calc.py": CALC_CONTEXT_MOVED}))
    toy_upstream.publish("1.2", toy_release({"toy/calc.py": FIXED_CALC}))
    toy_upstream.publish("1.3", toy_release({"toy/calc.py": FIXED_CALC, "n": "n"}))
    args = ["--config", str(toy_project.path), "bisect", "--until", "toy==1.3"]
    assert main(args) == 0
    assert "absorbed by toy 1.2 'toy 1.2'" in capsys.readouterr().out
    data = _report(toy_project)
    assert data["releases"] and data["applied_upstream"] == "toy 1.2"
    assert [s["subject"] for s in data["steps"]] == ["toy 1.3", "toy 1.1", "toy 1.2"]
    assert main([*args[:-1], "toy==0.9"]) == 2
    # the retirement record is checked against the measurement
    record = Retired(
        name="0001-x.patch",
        subject="x",
        applied_upstream="toy 1.1",
        how="absorbed-semantic",
        evidence="e",
        retired_from="toy 1.0",
        sha256="0" * 64,
        fix="toy-fix",
    )
    retired = toy_project.patches_dir / RETIRED_FILE
    retired.write_text(render_retired([record]))
    assert main(args) == 1
    assert "patches/retired.toml says toy 1.1" in capsys.readouterr().out
    # --record writes the measured answer into the record, and the measured
    # FAIL_TO_PASS tests (the guard's, #33 item 6) where it lists none
    before = retired.read_text()
    assert main([*args, "--record"]) == 0 and _report(toy_project)["agrees"]
    (after,) = parse_retired(retired.read_text())
    assert after.applied_upstream == "toy 1.2"
    assert after.evidence.startswith("e; bisected over releases (forkkit bisect")
    assert after.tests == ("tests/test_fix.py::test_limit_reaches_n",)
    assert replace(after, applied_upstream="toy 1.1", evidence="e", tests=()) == record
    assert retired.read_text() != before and main(args) == 0  # agrees now


@pytest.mark.e2e
def test_every_fix_bisected_over_releases(
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two fixes taken at two releases: one table, each fix measured with the
    other kept (as its red is)."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    cfg = make_two_fix_project(tmp_path / "p", toy_upstream, "2.0")
    count_fixed = {"toy/count.py": COUNT_FIXED}
    toy_upstream.publish("2.1", toy_release(count_fixed))
    toy_upstream.publish("2.2", toy_release({**count_fixed, "toy/calc.py": FIXED_CALC}))
    args = ["--config", str(cfg.path), "bisect", "--until", "toy==2.2"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "fix limit: absorbed by toy 2.2" in out
    assert "fix count: absorbed by toy 2.1" in out
    md = (cfg.workdir / "reports" / "bisect" / "bisect.md").read_text()
    assert (
        "| `limit` | toy 2.2 | - | 2 |" in md and "| `count` | toy 2.1 | - | 2 |" in md
    )


UPSTREAMS_OWN_TEST = """\
from toy.calc import limit


def test_limit_is_n_upstream():
    assert limit(7) == 7
"""


@pytest.mark.e2e
def test_bisect_finds_the_commit_where_the_fix_s_tests_no_longer_apply(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """#47 item 4: release, one upstream fix (with upstream's own test file
    of the same name), next release. The fix's tests apply nowhere after the
    release, so the fix's own runtime change says it: the middle commit."""
    git_line_toml(toy_project, toy_upstream, commit=toy_upstream.rev("1.0"))
    cfg = load_config(toy_project.path)
    files = {"toy/calc.py": FIXED_CALC, "tests/test_fix.py": UPSTREAMS_OWN_TEST}
    fix = toy_upstream.push_commit("[Bugfix] limit is n (#4242)", files)
    later = toy_upstream.push_commit("release 2.0", {"docs/n.md": "n\n"})
    assert main(["--config", str(cfg.path), "bisect"]) == 0
    out = capsys.readouterr().out
    assert f"absorbed by {fix[:12]} (#4242)" in out
    data = _report(cfg)
    assert data["first"]["commit"] == fix
    assert data["steps"][0]["commit"] == later
    assert "textual" in data["first"]["tests"]


@pytest.mark.e2e
def test_a_rebase_records_the_commit_that_took_the_fix_not_its_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """#47 item 4: a git upstream of three commits (release, one upstream
    fix, next release); ``rebase --onto-rev main --apply`` retires the fix
    the middle commit took, and its record names that commit."""
    up = SyntheticUpstream(tmp_path / "up")
    cfg = make_two_fix_project(tmp_path / "p", up, "1.0")
    git_line_toml(cfg, up, commit=up.rev("1.0"))
    fix = up.push_commit("[Bugfix] limit is n (#4242)", {"toy/calc.py": FIXED_CALC})
    later = up.push_commit("release 2.0", {"docs/n.md": "n\n"})
    argv = ["--config", str(cfg.path), "rebase", "--onto-rev", "main", "--apply"]
    assert main(argv) == 0, capsys.readouterr().err
    (record,) = [
        r
        for r in parse_retired((cfg.patches_dir / RETIRED_FILE).read_text())
        if r.fix == "limit"
    ]
    assert record.applied_upstream == f"{fix[:12]} (#4242)"
    assert later[:12] not in record.applied_upstream
    assert load_config(cfg.path).upstream.commit_pin.commit == later
