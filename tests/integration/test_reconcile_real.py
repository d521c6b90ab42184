"""Reconcile the real fork with vLLM 0.32.0's own version of the fix (release mode).

Sized to a few minutes: their side runs only the tests 0.32.0 adds/changes in
the test files our patches touch too (``shared``), and every run is narrowed
with ``-k`` to the tests fork.toml names by node id (the regression test both
sides edit). The 0.32.0 sdist is fetched at run time (sha256-pinned) into the
work dir; nothing of it is committed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forkkit.config import load_config
from forkkit.fork.fixes import load_fixes
from forkkit.fork.seriesfiles import load_series
from forkkit.line import Line
from forkkit.services.reconcile.model import Options
from forkkit.services.reconcile.run import reconcile
from tests.integration.projects import PIN_030

VLLM_0_32_0_SHA256 = "d2c957d5eee3d0985012151315ddc62cbe0cd368fc96a5fc3510438d9dddf2ad"
pytestmark = pytest.mark.integration


def test_reconcile_with_vllm_0_32_0(tmp_path: Path) -> None:
    cfg = load_config(PIN_030)
    if not load_series(cfg.series_file, cfg.patches_dir).patches:
        pytest.skip(f"{cfg.series_file} is empty: nothing to reconcile yet")
    names = ["test_hybrid_mamba_retention_mtp_resend_of_aligned_prompt"]
    opts = Options(
        sha256=VLLM_0_32_0_SHA256,
        their_tests="shared",
        pytest_args=("-k", " or ".join(names)),
        timeout=900,
        out_dir=tmp_path,
    )
    result, md, js = reconcile(Line.of(cfg), "vllm==0.32.0", opts)
    # 0.32.0 changes both runtime files of our fix: the two approaches meet.
    runtime = set(load_fixes(cfg).runtime_files)
    assert runtime <= set(result.theirs.runtime_paths)
    assert runtime <= {f.path for f in result.overlap.files}
    assert result.overlap.kind != "disjoint"
    keys = [rt.key for rt in result.runtimes]
    assert keys == [
        "base",
        "ours",
        "theirs",
        "ours+theirs",
        "theirs+ours",
        "0.32.0",
        "0.32.0+ours",
    ]
    # Our red/green holds inside the matrix: F2P fails on base, passes on ours.
    rows = {(r.side, r.category): r for r in result.matrix.rows}
    f2p = rows[("ours", "FAIL_TO_PASS")]
    n = len(f2p.tests)
    assert n > 0
    assert f2p.cells[keys.index("ours")] == f"{n}/{n} pass"
    assert f2p.cells[keys.index("base")].startswith(f"0/{n} pass")
    # Every cell of every row is a definite answer.
    for row in result.matrix.rows:
        assert all(c and c != "n/a" for c in row.cells), row
    data = json.loads(js.read_text())
    assert data["competitor"] == {"ref": "vllm==0.32.0", "kind": "release"}
    assert "### Behaviour matrix" in md.read_text()
