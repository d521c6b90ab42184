"""Red/green of the fix on the real vLLM 0.30.0 fork (pins/0.30.0): its focused
tests red on base runtime files and green on the fix, side by side.

The related suites are left to the main job (``forkkit red-green`` on the
project's pin runs them, packed onto both cores); here the classification of
the fix itself is what is checked, count for count: 108 FAIL_TO_PASS and 264
PASS_TO_PASS, as the sequential run gave when the fix was carried on 0.30.0.
About a minute alone on 2 cores."""

from __future__ import annotations

from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.tree import ForkTree
from forkkit.services.proof.render import render_markdown
from forkkit.services.proof.run import prove
from forkkit.vcs import scratch_root

pytestmark = pytest.mark.integration


def test_real_fork_red_green_is_valid(
    real_cfg: ForkConfig, carried_fork: ForkTree, tmp_path: Path
) -> None:
    cfg, tree = real_cfg, carried_fork
    # Parallel: red and green at once (also covers that path on real vLLM).
    result = prove(
        cfg,
        tree,
        related=False,
        parallel=True,
        out_dir=tmp_path / "reports",
        stream=False,
    )
    assert result.valid, "\n".join(result.problems)
    f2p = result.classification.ids("FAIL_TO_PASS")
    assert len(f2p) == 108
    assert len(result.classification.ids("PASS_TO_PASS")) == 264
    assert result.red.report is not None
    assert all(result.red.report.tests[t].is_assertion for t in f2p)
    assert not result.red.in_place and result.green.in_place
    assert result.related is None
    # Red tested the fork's own tests against base runtime files, exactly.
    git = tree.repo
    for f in cfg.fix.runtime_files:
        assert git.blob(result.red.tree, f) == git.blob(tree.base, f)
        assert git.blob(result.green.tree, f) == git.blob(tree.head, f)
    for target in cfg.fix.focused_tests:
        path = target.split("::", 1)[0]
        assert git.blob(result.red.tree, path) == git.blob(tree.head, path)
    # The fork tree is untouched and no scratch worktree is left behind.
    assert git.dirty() == [] and git.rev("HEAD") == tree.head
    assert not scratch_root(tree.path).exists()
    assert (tmp_path / "reports" / "red_green.md").read_text() == render_markdown(
        result
    )
