"""The resend reproduction on the real pinned vLLM fork, small config (~1-2 min)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.fork.tree import ForkTree
from forkkit.line import Line
from forkkit.services.repro.model import ReproOptions
from forkkit.services.repro.render import render_markdown
from forkkit.services.repro.run import reproduce
from forkkit.vcs import scratch_root

pytestmark = pytest.mark.integration


def test_identical_resend_recovers_the_mamba_checkpoint(
    real_cfg: ForkConfig, carried_fork: ForkTree, tmp_path: Path
) -> None:
    cfg, tree = real_cfg, carried_fork
    opts = ReproOptions(prompt_lens=(2000,), kinds=("identical",)).validate()
    result = reproduce(
        Line.of(cfg), tree, opts, out_dir=tmp_path / "reports", timeout=900
    )

    (row,) = result.comparisons
    assert result.base is not None, "the fix must change the runtime files"
    # The fix: an identical MTP resend hits all but the one dropped hash block.
    assert row.fix_cached == 2000 - opts.hash_block_size
    # Base: the Mamba checkpoint there is unreachable, so the hit falls back.
    assert row.base_cached is not None and row.base_cached < row.fix_cached
    # The seed itself never hits, on either runtime.
    assert result.fix.rows[0].extra["seed_cached_tokens"] == 0
    assert result.base.rows[0].extra["seed_cached_tokens"] == 0
    md = render_markdown(result)
    assert f"| 2,000 | identical | 2,000 | {row.base_cached:,} | 1,984 |" in md
    script = json.loads((tmp_path / "reports" / "repro-base.script.json").read_text())
    assert Path(script["vllm_path"]).name.startswith("fork-repro-base-")
    # The fork tree is untouched and no scratch worktree is left behind.
    assert tree.repo.dirty() == [] and tree.repo.rev("HEAD") == tree.head
    assert not scratch_root(tree.path).exists()
