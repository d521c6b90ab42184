"""Shared fixtures: synthetic upstreams and isolated work dirs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from forkkit.config import ForkConfig, load_config
from tests.synthetic import BUGGY, SyntheticUpstream, make_project, toy_testenv_python


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (``-n``, default ``--dist load``) the integration
    tests stay in two groups, each on one worker, in order: the reconcile
    tests (one reconcile repo), and the rest (one shared fork; the 0.34.0
    dry run after the 0.31.0 rebase, whose runs on 0.30.0 it reuses from the
    result cache). xdist hands
    out the biggest groups first, so on two workers they run side by side;
    the unit and contract tests fill in around them. (Both groups share the
    test venv and the sdist tree: building those takes a lock.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class IntegrationTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/integration/test_reconcile"):
                return "integration-reconcile"
            return "integration" if nodeid.startswith("tests/integration/") else nodeid

    return IntegrationTogether(config, log)


@pytest.fixture(scope="session")
def toy_template(tmp_path_factory: pytest.TempPathFactory) -> SyntheticUpstream:
    """Toy 1.0 published and a project over it, built once per session (worker).

    Never used directly: ``toy_upstream``/``toy_project`` hand each test its
    own copy (a copy is several times cheaper than publishing again).
    """
    root = tmp_path_factory.mktemp("toy-template")
    up = SyntheticUpstream(root / "upstream")
    up.publish("1.0", BUGGY)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FORKKIT_WORKDIR", str(root / "wd"))
        make_project(root / "project", up, "1.0")
    return up


@pytest.fixture
def toy_upstream(tmp_path: Path, toy_template: SyntheticUpstream) -> SyntheticUpstream:
    """A toy upstream with version 1.0 published (sdist + git)."""
    shutil.copytree(toy_template.root, tmp_path / "upstream", symlinks=True)
    versions = {v: dict(files) for v, files in toy_template.versions.items()}
    return SyntheticUpstream(tmp_path / "upstream", toy_template.name, versions)


@pytest.fixture
def toy_project(
    tmp_path: Path,
    toy_upstream: SyntheticUpstream,
    toy_template: SyntheticUpstream,
    monkeypatch: pytest.MonkeyPatch,
) -> ForkConfig:
    """A fork-kit project carrying the toy fix over toy 1.0, with its own workdir."""
    monkeypatch.setenv("FORKKIT_WORKDIR", str(tmp_path / "wd"))
    monkeypatch.setenv("FORKKIT_TESTENV_PYTHON", toy_testenv_python())
    template = toy_template.root.parent
    shutil.copytree(template / "project", tmp_path / "project", symlinks=True)
    toml = tmp_path / "project" / "fork.toml"
    toml.write_text(toml.read_text().replace(str(template), str(tmp_path)))
    return load_config(toml)
