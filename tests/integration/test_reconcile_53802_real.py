# SPDX-License-Identifier: Apache-2.0
"""Reconcile the real fork with our model of #53802 (competitors/), on the
pinned vLLM: both test sets on base, ours, theirs and both stacks, and the
CPU resend reproduction in each tree.

Subset mode, to fit CI: ``-k`` keeps a few of our tests (the 16k resend, the
caller's-limit cases, the disabled-by-default guard, the retention resend)
and their six new or changed ones; the full run is
``./dev -s reconcile -- --with competitors/pr53802-model.patch``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit.config import load_config
from forkkit.fork.fixes import load_fixes
from forkkit.fork.seriesfiles import load_series
from forkkit.line import Line
from forkkit.services.reconcile.answers import OURS_ON_THEIRS, RESEND_RUNTIMES
from forkkit.services.reconcile.model import Options
from forkkit.services.reconcile.run import reconcile
from tests.integration.projects import PIN_030, ROOT

MODEL = ROOT / "competitors" / "pr53802-model.patch"
pytestmark = pytest.mark.integration
SUBSET = " or ".join(
    (
        # ours
        "resend_of_a_16k_prompt_reaches_its_checkpoint",
        "hit_stays_within_the_callers_limit",
        "disabled_by_default",
        "retention_mtp_resend_of_aligned_prompt",
        # theirs
        "retention_interval_aligns_in_manager",
        "latest_only_reuses_replay_boundary",
        "partial_tail_registers_at_hittable_boundary",
        "resend_hits_registered_tail",
    )
)


def test_reconcile_with_the_53802_model(tmp_path: Path) -> None:
    cfg = load_config(PIN_030)
    if not load_series(cfg.series_file, cfg.patches_dir).patches:
        pytest.skip(f"{cfg.series_file} is empty: nothing to reconcile yet")
    opts = Options(
        their_tests="changed",
        pytest_args=("-k", SUBSET),
        timeout=900,
        out_dir=tmp_path,
        resend="qwen3.5-0.8b",
    )
    result, md, js = reconcile(Line.of(cfg), str(MODEL), opts)
    # Their runtime files are not all ours: scheduler.py is theirs alone.
    theirs = set(result.theirs.runtime_paths)
    assert "vllm/v1/core/sched/scheduler.py" in theirs
    assert not theirs <= set(load_fixes(cfg).runtime_files)
    assert [rt.key for rt in result.runtimes] == list(RESEND_RUNTIMES)
    # Every cell of the matrix and of the resend table was measured.
    assert result.measurement.verdict == "measured", result.measurement.summary()
    rows = {(r.side, r.category): r for r in result.matrix.rows}
    f2p = rows[("ours", "FAIL_TO_PASS")]
    keys = [rt.key for rt in result.runtimes]
    n = len(f2p.tests)
    assert n > 0 and f2p.cells[keys.index("ours")] == f"{n}/{n} pass"
    assert len(rows[("theirs", "FAIL_TO_PASS")].tests) == 6  # theirs, red on base
    # The resend table: base misses the checkpoint, ours hits it (15,984
    # of 16,000 on an identical resend, as forkkit repro measures).
    trees = result.trees
    assert trees is not None
    by = {c.runtime: c for c in trees.resend}
    assert set(by) == set(RESEND_RUNTIMES)
    base, ours = by["base"].row("identical"), by["ours"].row("identical")
    assert base is not None and ours is not None
    assert (base.resend_tokens, ours.cached_tokens) == (16000, 15984)
    assert base.cached_tokens < ours.cached_tokens
    assert by[OURS_ON_THEIRS].row("identical") is not None
    text = md.read_text()
    assert text.splitlines()[2] == "### Answers"
    assert "pr53802-model.patch" in text.splitlines()[0]  # no local path
    data = json.loads(js.read_text())
    assert data["answers"]["resend"]["runtimes"] == list(RESEND_RUNTIMES)
