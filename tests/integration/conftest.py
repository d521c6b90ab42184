# SPDX-License-Identifier: Apache-2.0
"""One real fork per test session, shared by the integration tests.

The sdist cache and the CPU test venv are the project's (``.forkkit`` or
``FORKKIT_WORKDIR``): built once and shared with the main job. The fork tree
is materialized once into a temporary folder; every test that uses it checks
it leaves it as it found it (clean, on the fork's HEAD).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from forkkit.config import ForkConfig, load_config
from forkkit.fork.seriesfiles import load_series
from forkkit.fork.tree import ForkTree, materialize
from tests.integration.projects import PIN_030


@pytest.fixture(scope="session")
def real_cfg() -> ForkConfig:
    """The fix as carried on vLLM 0.30.0 (pins/0.30.0)."""
    return load_config(PIN_030)


@pytest.fixture(scope="session")
def real_fork(
    real_cfg: ForkConfig, tmp_path_factory: pytest.TempPathFactory
) -> ForkTree:
    """The fork (base + patches/series), materialized once per session."""
    return materialize(real_cfg, dest=tmp_path_factory.mktemp("real") / "fork")


@pytest.fixture
def carried_fork(real_cfg: ForkConfig, real_fork: ForkTree) -> Iterator[ForkTree]:
    """The shared fork (skips while the series is empty); left as found."""
    if not load_series(real_cfg.series_file, real_cfg.patches_dir).patches:
        pytest.skip(f"{real_cfg.series_file} is empty: no fix to test yet")
    yield real_fork
    repo = real_fork.repo
    assert repo.dirty() == [] and repo.rev("HEAD") == real_fork.head, (
        "a test changed the shared fork tree"
    )
