"""Shared fixtures: synthetic upstreams and isolated work dirs."""

from __future__ import annotations

from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from tests.synthetic import BUGGY, SyntheticUpstream, make_project, toy_testenv_python


@pytest.fixture
def toy_upstream(tmp_path: Path) -> SyntheticUpstream:
    """A toy upstream with version 1.0 published (sdist + git)."""
    up = SyntheticUpstream(tmp_path / "upstream")
    up.publish("1.0", BUGGY)
    return up


@pytest.fixture
def toy_project(
    tmp_path: Path, toy_upstream: SyntheticUpstream, monkeypatch: pytest.MonkeyPatch
) -> ForkConfig:
    """A fork-kit project carrying the toy fix over toy 1.0, with its own workdir."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    return make_project(tmp_path / "project", toy_upstream, "1.0")
