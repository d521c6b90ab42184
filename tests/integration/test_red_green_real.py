"""Each of the seed's fixes proven alone on the real vLLM 0.30.0 fork
(pins/0.30.0): red is the fork with only that fix's runtime hunks reverted,
every other fix kept; green is the fork; side by side.

Each fix's own classification is checked, count for count. The runs are
the ones the main job makes on the same trees (``red-green --all-lines``
proves this line: three reds and the related suites on the fork, which hold
every fix's focused tests): the result cache serves them here when the main
job ran first, as it does in CI; alone, this test makes them itself."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.config import ForkConfig
from forkkit.fork.fixes import load_fixes
from forkkit.fork.tree import ForkTree
from forkkit.line import Line
from forkkit.services.proof.render import render_markdown
from forkkit.services.proof.run import prove
from forkkit.testing.cache import ResultCache
from forkkit.vcs import scratch_root

pytestmark = pytest.mark.integration

# fix id: (FAIL_TO_PASS, PASS_TO_PASS) of its focused tests, each proven alone
SEED_FIXES = {
    "registration": (14, 109),
    "lookup-margin": (37, 87),
    "dcp-checkpoint": (43, 205),
}


def test_each_seed_fix_is_proven_alone(
    real_cfg: ForkConfig, carried_fork: ForkTree, tmp_path: Path
) -> None:
    cfg, tree = real_cfg, carried_fork
    fixes = load_fixes(cfg)
    assert [f.id for f in fixes.fixes] == list(SEED_FIXES)
    cache = ResultCache(cfg.work.results)
    git = tree.repo
    for fix in fixes.fixes:
        out = tmp_path / fix.id
        result = prove(
            Line.of(cfg),
            tree,
            parallel=True,  # red beside green: that path on real vLLM too
            out_dir=out,
            stream=False,
            fix=fix.id,
            cache=cache,
        )
        assert result.valid, "\n".join(result.problems)
        f2p = result.classification.ids("FAIL_TO_PASS")
        p2p = result.classification.ids("PASS_TO_PASS")
        assert (len(f2p), len(p2p)) == SEED_FIXES[fix.id], fix.id
        assert result.red.report is not None
        assert all(result.red.report.tests[t].is_assertion for t in f2p)
        # green is read from the related run, which holds the focused tests
        assert result.related is not None and result.related.report is not None
        assert result.green.tree == result.related.tree
        # Red: this fix's runtime files changed back, every other one kept.
        for other in fixes.fixes:
            for f in set(other.runtime_files) - set(fix.runtime_files):
                assert git.blob(result.red.tree, f) == git.blob(tree.head, f)
        for f in fix.runtime_files:
            assert git.blob(result.red.tree, f) != git.blob(tree.head, f)
        for f in fix.test_files:
            assert git.blob(result.red.tree, f) == git.blob(tree.head, f)
        assert result.green.tree == git.tree(tree.head)
        assert (out / "red_green.md").read_text() == render_markdown(result)
    # registration and dcp-checkpoint share a runtime file: registration's red
    # keeps dcp-checkpoint's hunks in it, so it is neither base nor the fork
    shared = "vllm/v1/core/single_type_kv_cache_manager.py"
    assert shared in fixes.get("registration").runtime_files
    assert shared in fixes.get("dcp-checkpoint").runtime_files
    # The fork tree is untouched and no scratch worktree is left behind.
    assert git.dirty() == [] and git.rev("HEAD") == tree.head
    assert not scratch_root(tree.path).exists()


def test_a_patch_outside_every_fix_is_refused_on_real_vllm(
    real_cfg: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The seed's series with one patch's Forkkit-Fix trailer taken out: its
    runtime change and tests belong to no fix, so no proof can be valid; one
    line naming the patch, before anything is built or run."""
    proj = tmp_path / "pin"
    shutil.copytree(real_cfg.root, proj)
    last = sorted((proj / "patches").glob("0003-*.patch"))[0]
    text = last.read_text()
    assert "\nForkkit-Fix: dcp-checkpoint\n" in text
    last.write_text(text.replace("\nForkkit-Fix: dcp-checkpoint\n", "\n"))
    toml = proj / "fork.toml"
    toml.write_text(toml.read_text().replace('path = "../../.forkkit"', 'path = "wd"'))
    assert cli.main(["--config", str(toml), "red-green"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"forkkit: error: {last.name}: belongs to no fix")
    assert not (proj / "wd" / "fork").exists()  # refused before any build
