"""Rebase the real series from vLLM 0.30.0 onto 0.31.0 and 0.34.0 (measured).

0.31.0 ships upstream's own fix of the Mamba tail registration, not ours:
the first patch still merges (3-way) but its FAIL_TO_PASS tests already pass
on pristine 0.31.0 with only its test changes, so it is absorbed; the lookup
patch's tests still fail there on an assertion, so it carries, and so do the
patches after it. Only the two decisive tests are selected (``-k``) to keep
this to a few minutes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from forkkit.config import ForkConfig, load_config
from forkkit.fork.seriesfiles import load_series
from forkkit.line import Line
from forkkit.patches.series import Series
from forkkit.services.rebase.model import Options
from forkkit.services.rebase.run import rebase, resolve_target
from forkkit.testing.env import ensure_testenv
from forkkit.upstream.sdist import extract_sdist, fetch_sdist
from forkkit.vcs import Repo
from tests.integration.projects import PIN_030

pytestmark = pytest.mark.integration
DECISIVE = (
    "test_mamba_tail_is_registered_at_the_eagle_resume_point"
    " or test_hit_stays_within_the_callers_limit"
)


def _pinned_venv(cfg: ForkConfig, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every version's tests run in the pinned version's CPU venv (the newer
    requirements are not installed; the cache suites need none of them)."""
    if os.environ.get("FORKKIT_TESTENV_PYTHON"):
        return
    sdists = cfg.workdir / "cache" / "sdist"
    tree = extract_sdist(
        fetch_sdist(cfg.upstream, sdists),
        cfg.workdir / "upstream" / f"vllm-{cfg.upstream.release.version}",
        cfg.upstream.release.sha256,
    )
    python = ensure_testenv(cfg, tree).python
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", str(python))


def _scratch_workdir(
    cfg: ForkConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> ForkConfig:
    """The rebase repo, trees and reports go to a temporary work dir; the
    sdist cache, the extracted sdists (each checked against its sha256 when
    used) and the result cache stay the project's (a run is reused only for
    the same tree, venv and arguments: the two rebases share their runs on
    0.30.0)."""
    wd = tmp_path / "wd"
    (wd / "cache").mkdir(parents=True)
    (wd / "cache" / "sdist").symlink_to(cfg.workdir / "cache" / "sdist")
    (cfg.workdir / "upstream").mkdir(parents=True, exist_ok=True)
    (wd / "upstream").symlink_to(cfg.workdir / "upstream")
    cfg.work.results.mkdir(parents=True, exist_ok=True)
    (wd / "results").symlink_to(cfg.work.results)
    monkeypatch.setenv("FORKKIT_WORKDIR", str(wd))
    return load_config(PIN_030)


def _series_on_030(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, at_least: int
) -> tuple[ForkConfig, Series, dict[Path, bytes]]:
    """The project's series (skips unless pinned to 0.30.0 with ``at_least``
    patches), its config in a scratch work dir with the pinned venv, and the
    bytes of fork.toml and patches/ before the test."""
    cfg = load_config(PIN_030)
    series = load_series(cfg.series_file, cfg.patches_dir)
    if cfg.upstream.release.version != "0.30.0" or len(series.patches) < at_least:
        pytest.skip("measured for the series pinned to vLLM 0.30.0")
    before = {p: p.read_bytes() for p in [cfg.path, *cfg.patches_dir.iterdir()]}
    _pinned_venv(cfg, monkeypatch)
    return _scratch_workdir(cfg, tmp_path, monkeypatch), series, before


def test_rebase_onto_031_absorbs_registration_carries_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg, series, before = _series_on_030(tmp_path, monkeypatch, at_least=2)

    target = resolve_target(Line.of(cfg), "vllm==0.31.0")
    result = rebase(
        Line.of(cfg),
        target,
        Options(related=False, pytest_args=("-k", DECISIVE)),
    )

    registration, lookup, *later = result.patches
    assert registration.status == "absorbed-semantic", registration.detail
    assert registration.semantic is not None and registration.semantic.passed
    assert lookup.status in ("clean", "3way"), lookup.detail
    assert lookup.semantic is not None and lookup.semantic.failed
    for patch in later:
        assert patch.status in ("clean", "3way"), patch.detail
    assert not result.can_retire and result.outcome == "rebased"
    assert result.proof_valid is True
    # per fix: upstream took the registration in 0.31.0, the others carry
    assert [(f.fix, f.verdict) for f in result.fixes] == [
        ("registration", "absorbed"),
        ("lookup-margin", "carried"),
        ("dcp-checkpoint", "carried"),
    ]
    # the lookup patch builds on the registration patch's tests: they stay,
    # tests only
    assert len(result.new_series) == len(series.patches)
    assert (
        "[Tests]"
        in (Path(result.out_dir) / "patches" / result.new_series[0]).read_text()
    )
    # a dry run: nothing of the project changed
    assert before == {p: p.read_bytes() for p in before}


def test_dry_run_onto_034_absorbs_registration_and_stops_at_the_lookup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM 0.34.0 from a fresh clone (no recorded resolution): upstream
    rewrote the registration (absorbed: its tests pass there without it) and
    the lookup (our hunks conflict with upstream's own proof margin). The
    resolution (upstream's code, our test refreshes) is a maintainer's, and
    after it the whole series is absorbed (see the closing note of issue 21);
    here the tool names the files, tries the last patch too (it builds on the
    lookup's lines, left out: it conflicts), and leaves the lookup's conflict
    in the rebase repository to resolve (#46)."""
    cfg, _, before = _series_on_030(tmp_path, monkeypatch, at_least=3)

    result = rebase(
        Line.of(cfg),
        resolve_target(Line.of(cfg), "vllm==0.34.0"),
        Options(red_green=False, pytest_args=("-k", DECISIVE)),
    )

    registration, lookup, dcp = result.patches
    assert registration.status == "absorbed-semantic", registration.detail
    assert lookup.status == "conflict", lookup.detail
    conflicted = {c.path for c in lookup.conflicts}
    assert "vllm/v1/core/kv_cache_coordinator.py" in conflicted
    assert dcp.status == "conflict" and dcp.files, dcp.detail  # tried
    assert all(f.verdict for p in result.patches for f in p.files)
    left = Repo(Path(result.repo)).unmerged()
    assert "vllm/v1/core/kv_cache_coordinator.py" in left  # the first conflict
    assert result.outcome == "conflict" and not result.written
    assert before == {p: p.read_bytes() for p in before}
