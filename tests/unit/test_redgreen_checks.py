# SPDX-License-Identifier: Apache-2.0
"""The flake check (``--repeat``) and the hunk matrix (``--hunks``) of the
red/green proof, on toy forks (issue 13)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.tree import materialize
from forkkit.line import Line
from forkkit.services.proof.checks import repeat_orders
from forkkit.services.proof.model import ProofChecks
from forkkit.services.proof.render import render_markdown
from forkkit.services.proof.run import prove
from forkkit.testing import env as testenv
from forkkit.vcs.overlay import revert_hunk_commit
from tests.synthetic import BUGGY, FIX_TEST, SyntheticUpstream, make_project
from tests.synthetic import fixed_fork as fork

FIX_ID = "tests.test_fix::test_limit_reaches_n"

# Each test appends its name to $TOY_ORDER_LOG: the order the tests ran in.
ORDER_TEST = FIX_TEST + "".join(
    textwrap.dedent(
        f"""\


        def test_{name}():
            import os

            with open(os.environ["TOY_ORDER_LOG"], "a") as fh:
                fh.write("{name}\\n")
        """
    )
    for name in ("a", "b", "c", "d")
)
# Passes on every other run: $TOY_COUNTER counts its runs.
FLAKY_TEST = FIX_TEST + textwrap.dedent(
    """\


    def test_coin():
        import os

        path = os.environ["TOY_COUNTER"]
        n = int(open(path).read()) if os.path.exists(path) else 0
        open(path, "w").write(str(n + 1))
        assert n % 2 == 0
    """
)


def test_repeat_orders() -> None:
    assert repeat_orders(3, 40) == ("reversed", "random:40", "random:41")
    assert repeat_orders(0, 1) == ()


@pytest.mark.e2e
def test_repeat_really_runs_in_other_orders(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = tmp_path / "order.log"
    monkeypatch.setenv("TOY_ORDER_LOG", str(log))
    monkeypatch.setenv(testenv.PASS_ENV, "TOY_ORDER_LOG")
    cfg, out = fork(tmp_path, toy_upstream, {"tests/test_fix.py": ORDER_TEST})
    tree = materialize(cfg)
    checks = ProofChecks(repeat=2, seed=7)
    result = prove(
        Line.of(cfg), tree, related=False, out_dir=out, stream=False, checks=checks
    )
    assert result.valid, result.problems
    rep = result.repeat
    assert rep is not None and rep.orders == ("reversed", "random:7")
    assert rep.flaky == () and len(rep.runs) == 2
    runs = log.read_text().split()
    assert len(runs) == 4 * 4  # red, green, two repeats
    assert runs[8:12] == ["d", "c", "b", "a"]  # repeat 1: reversed
    data = json.loads((out / "red_green.json").read_text())
    assert {k: data["repeat"][k] for k in ("n", "seed", "orders", "flaky")} == {
        "n": 2,
        "seed": 7,
        "orders": ["reversed", "random:7"],
        "flaky": [],
    }
    assert "### Flake check (`--repeat 2`, seed 7)" in render_markdown(result)
    # Again: red and green come from the result cache, the repeats never do.
    again = prove(
        Line.of(cfg), tree, related=False, out_dir=out, stream=False, checks=checks
    )
    assert again.red.cached and again.green.cached
    assert again.repeat is not None
    assert not any(r.cached for r in again.repeat.runs)
    assert len(log.read_text().split()) == 16 + 2 * 4


@pytest.mark.e2e
def test_flaky_test_makes_the_proof_invalid(
    toy_project: ForkConfig,
    toy_upstream: SyntheticUpstream,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOY_COUNTER", str(tmp_path / "counter"))
    monkeypatch.setenv(testenv.PASS_ENV, "TOY_COUNTER")
    cfg, out = fork(tmp_path, toy_upstream, {"tests/test_fix.py": FLAKY_TEST})
    checks = ProofChecks(repeat=2)
    result = prove(
        Line.of(cfg),
        materialize(cfg),
        related=False,
        out_dir=out,
        stream=False,
        checks=checks,
    )
    assert not result.valid
    assert result.repeat is not None
    assert result.repeat.flaky == ("tests.test_fix::test_coin",)
    assert any("1 FLAKY test(s)" in p for p in result.problems), result.problems
    data = json.loads((out / "red_green.json").read_text())
    assert data["repeat"]["flaky"] == ["tests/test_fix.py::test_coin"]
    assert isinstance(data["repeat"]["seed"], int)
    assert any(g["guard"] == "flaky" for g in data["guards"])


# Toy 1.1: a longer calc.py, so that two changes far apart are two hunks.
CALC_11 = BUGGY["toy/calc.py"] + textwrap.dedent(
    """\


    def triple(n):
        return 3 * n


    def square(n):
        return n * n


    def _spare(n):
        return None
    """
)
FIX_11 = CALC_11.replace("return n - 1", "return n").replace("return None", "return n")


def hunk_fork(tmp_path: Path, up: SyntheticUpstream) -> tuple[ForkConfig, Path]:
    up.publish("1.1", {**BUGGY, "toy/calc.py": CALC_11})
    changes = [
        ("[Bugfix] limit", {"toy/calc.py": FIX_11, "tests/test_fix.py": FIX_TEST})
    ]
    cfg = make_project(tmp_path / "proj", up, "1.1", changes=changes)
    return cfg, tmp_path / "r"


@pytest.mark.e2e
def test_hunk_matrix(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream, tmp_path: Path
) -> None:
    cfg, out = hunk_fork(tmp_path, toy_upstream)
    tree = materialize(cfg)
    checks = ProofChecks(hunks=True)
    result = prove(
        Line.of(cfg),
        tree,
        related=False,
        out_dir=out,
        stream=False,
        parallel=True,
        checks=checks,
    )
    assert result.valid, result.problems  # an untested hunk is a warning
    assert result.hunks is not None
    limit, spare = result.hunks
    assert limit.symbol == "limit" and limit.turns_red == (FIX_ID,)
    assert limit.kinds == ("AssertionError",) and not limit.untested
    assert spare.symbol == "_spare" and spare.untested and spare.reverted
    assert spare.hunk.startswith("hunk 2/2 of toy/calc.py")
    assert any("1 untested runtime hunk(s)" in n for n in result.notes)
    # only that hunk reverted: limit is back to base, _spare keeps the fix
    reverted = tree.repo.read_blob(f"{limit.tree}:toy/calc.py").decode()
    assert reverted == FIX_11.replace("return n\n", "return n - 1\n", 1)
    md = render_markdown(result)
    assert "### Hunk matrix" in md and "1 of 2 hunk(s) needed" in md
    assert "| `_spare` |" in md and "untested" in md
    data = json.loads((out / "red_green.json").read_text())
    row = data["hunks"][0]
    assert row["turns_red"] == ["tests/test_fix.py::test_limit_reaches_n"]
    assert {k: row[k] for k in ("path", "symbol", "reverted", "untested")} == {
        "path": "toy/calc.py",
        "symbol": "limit",
        "reverted": True,
        "untested": False,
    }
    # --strict-hunks: the untested hunk makes the proof invalid; runs cached.
    strict = ProofChecks(hunks=True, strict_hunks=True)
    again = prove(
        Line.of(cfg), tree, related=False, out_dir=out, stream=False, checks=strict
    )
    assert not again.valid
    assert any("1 untested runtime hunk(s)" in p for p in again.problems)
    assert again.hunks is not None and all(c.cached for c in again.hunks)


def test_revert_hunk_commit(toy_project: ForkConfig) -> None:
    tree = materialize(toy_project)
    repo = tree.repo
    diff = repo.diff(a="base", b="HEAD", paths=["toy/calc.py"])
    done = revert_hunk_commit(repo, onto="HEAD", patch=diff, message="r\n")
    assert done.applied.ok
    assert repo.blob(done.commit, "toy/calc.py") == repo.blob("base", "toy/calc.py")
    assert repo.rev("HEAD") == tree.head and repo.dirty() == []
    stuck = revert_hunk_commit(repo, onto="base", patch=diff, message="r\n")
    assert not stuck.applied.ok and stuck.commit == ""
