# SPDX-License-Identifier: Apache-2.0
"""A line on a git branch (#32): no sdist fields, pinned by its commit,
proven, and watched for new commits on the branch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from forkkit.cli import main
from forkkit.config import ForkConfig, load_config
from forkkit.errors import ForkkitError
from tests.synthetic import (
    CALC_CONTEXT_MOVED,
    FIXED_CALC,
    SyntheticUpstream,
    git_line_toml,
)


@pytest.fixture
def git_line(toy_project: ForkConfig, toy_upstream: SyntheticUpstream) -> ForkConfig:
    """The toy project re-pinned to branch main at release 1.0's commit."""
    git_line_toml(toy_project, toy_upstream, commit=toy_upstream.rev("1.0"))
    return load_config(toy_project.path)


def _cli(cfg: ForkConfig, *args: str) -> int:
    return main(["--config", str(cfg.path), *args])


def _watch_json(cfg: ForkConfig) -> Any:
    return json.loads((cfg.workdir / "reports" / "watch" / "watch.json").read_text())


def test_a_git_line_needs_no_sdist_fields(git_line: ForkConfig) -> None:
    up = git_line.upstream
    assert up.source == "git" and up.sdist is None
    assert up.commit_pin.rev == "main" and up.label.startswith("toy@")
    assert "version" not in git_line.path.read_text()
    with pytest.raises(ForkkitError, match="a git upstream has no release version"):
        _ = up.release


def test_a_branch_without_its_commit_is_one_line(
    toy_project: ForkConfig, toy_upstream: SyntheticUpstream
) -> None:
    git_line_toml(toy_project, toy_upstream, commit=toy_upstream.rev("1.0"))
    text = toy_project.path.read_text()
    toy_project.path.write_text(
        "\n".join(ln for ln in text.splitlines() if "git_commit" not in ln)
    )
    with pytest.raises(ForkkitError) as exc:
        load_config(toy_project.path)
    msg = str(exc.value)
    assert "git_rev 'main' names no commit by itself" in msg and "\n" not in msg
    assert f"git ls-remote {toy_upstream.bare.as_uri()} main" in msg


@pytest.mark.e2e
def test_a_git_line_is_proven_and_watched_commit_by_commit(
    git_line: ForkConfig,
    toy_upstream: SyntheticUpstream,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Done when (#32): the fork pinned to a branch materializes and proves;
    watch sees a new commit that does not absorb the fix (carries, 10) and
    one that does (absorbed, 30); nothing new is current (0)."""
    assert _cli(git_line, "red-green") == 0
    summary = json.loads(
        (git_line.workdir / "reports" / "red_green" / "summary.json").read_text()
    )
    assert [r["valid"] for r in summary["fixes"]] == [True]
    assert summary["upstream"] == f"git:{toy_upstream.bare.as_uri()}@" + (
        toy_upstream.rev("1.0")
    )
    before = git_line.path.read_bytes()

    assert _cli(git_line, "watch", "--focused-only") == 0
    assert _watch_json(git_line)["verdict"] == "current"

    moved = toy_upstream.push_commit(
        "Type the helpers", {"toy/calc.py": CALC_CONTEXT_MOVED}
    )
    assert _cli(git_line, "watch", "--focused-only") == 10
    data = _watch_json(git_line)
    assert data["verdict"] == "carries" and data["checked"] == moved
    assert data["follows"] == "main of a local repository (upstream.git)"
    assert data["newer"] == [moved]

    fixed = toy_upstream.push_commit(
        "[Bugfix] limit reaches n (upstream's own)", {"toy/calc.py": FIXED_CALC}
    )
    assert _cli(git_line, "watch", "--focused-only") == 30
    data = _watch_json(git_line)
    assert data["verdict"] == "absorbed" and data["newer"] == [fixed, moved]
    md = (git_line.workdir / "reports" / "watch" / "watch.md").read_text()
    assert f"--onto-rev {fixed}" in md and "New commits since the pin: 2" in md
    assert git_line.path.read_bytes() == before  # watch never writes fork.toml
    capsys.readouterr()


def test_watching_a_branch_the_remote_lacks_is_one_line(
    git_line: ForkConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    text = git_line.path.read_text().replace('git_rev = "main"', 'git_rev = "gone"')
    git_line.path.write_text(text)
    assert _cli(git_line, "watch") == 2
    err = capsys.readouterr().err
    assert "no branch or tag 'gone'" in err and "Traceback" not in err


def test_an_index_with_no_release_at_all_is_an_error(
    toy_project: ForkConfig, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty-index"
    (empty / "toy").mkdir(parents=True)
    assert _cli(toy_project, "watch", "--index-url", empty.as_uri()) == 2
    err = capsys.readouterr().err
    assert "lists no release of toy at all" in err
