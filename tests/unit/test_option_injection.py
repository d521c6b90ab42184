# SPDX-License-Identifier: Apache-2.0
"""No value from fork.toml or the command line reaches git as an option (#44 K1).

Every field and option that names a revision, ref or URL is fed values that
git would run as a command if it read them as options (``--upload-pack=``,
``-c``, ``--config=``, the ``ext::`` transport). Each must end in one line
(exit 2) with nothing run: the marker file the command would touch is never
made.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.vcs import Repo
from forkkit.vcs.git import Git, operand
from tests.synthetic import SyntheticUpstream, git_line_toml
from tests.unit.test_bad_input import forkkit_main


def _payloads(marker: Path) -> list[str]:
    return [
        f"--upload-pack=touch {marker};false",
        "-c",
        f"--config=core.sshCommand=touch {marker}",
        f"-cprotocol.ext.allow=always ext::sh -c touch% {marker}",
    ]


def _url_payloads(marker: Path) -> list[str]:
    return [*_payloads(marker), f"ext::sh -c touch% {marker}"]


def _toml_with(cfg: ForkConfig, key: str, value: str) -> None:
    text = cfg.path.read_text()
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    text = re.sub(rf"(?m)^{key} = .*$", f'{key} = "{escaped}"', text)
    cfg.path.write_text(text)


@pytest.fixture
def git_project(toy_project: ForkConfig, toy_upstream: SyntheticUpstream) -> ForkConfig:
    git_line_toml(toy_project, toy_upstream, commit=toy_upstream.rev("1.0"))
    return toy_project


def _check(
    marker: Path, args: list[str], cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    proc = forkkit_main(*args, cwd=cwd, capsys=capsys)
    assert not marker.exists(), f"{args}: git ran the value as a command"
    assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("forkkit: error:"), proc.stderr


@pytest.mark.parametrize("key", ["git_url", "git_rev", "git_commit"])
@pytest.mark.parametrize("which", range(5))
def test_a_fork_toml_field_never_reaches_git_as_an_option(
    git_project: ForkConfig,
    tmp_path: Path,
    key: str,
    which: int,
    capsys: pytest.CaptureFixture[str],
) -> None:
    marker = tmp_path / "pwned"
    values = _url_payloads(marker) if key == "git_url" else _payloads(marker)
    if which >= len(values):
        pytest.skip("a URL-only payload")
    _toml_with(git_project, key, values[which])
    cfg = ["--config", str(git_project.path)]
    for command in (["materialize"], ["watch"], ["bisect"]):
        _check(marker, [*cfg, *command], git_project.path.parent, capsys)


ROUTES = [
    ("materialize", "--rev"),
    ("materialize", "--git-url"),
    ("rebase", "--onto-rev"),
    ("bisect", "--good"),
    ("bisect", "--bad"),
    ("bisect", "--git-url"),
    ("reconcile", "--with"),
    ("reconcile", "--git-url"),
]


@pytest.mark.parametrize(("command", "option"), ROUTES)
def test_a_command_line_value_never_reaches_git_as_an_option(
    git_project: ForkConfig,
    tmp_path: Path,
    command: str,
    option: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    marker = tmp_path / "pwned"
    payloads = _url_payloads(marker) if option == "--git-url" else _payloads(marker)
    extra = {"reconcile": ["--with=pull/1/head"]} if option == "--git-url" else {}
    for value in payloads:
        args = ["--config", str(git_project.path), command, f"{option}={value}"]
        _check(
            marker, [*args, *extra.get(command, [])], git_project.path.parent, capsys
        )


def test_the_vcs_layer_refuses_an_option_shaped_operand(tmp_path: Path) -> None:
    """The one place argv is built refuses what the commands did not catch."""
    marker = tmp_path / "pwned"
    repo = Repo.init(tmp_path / "repo")
    for value in _payloads(marker):
        with pytest.raises(ForkkitError, match="not a revision or URL"):
            operand(value)
        with pytest.raises(ForkkitError, match="not a revision or URL"):
            repo.rev(value)
        with pytest.raises(ForkkitError, match="not a revision or URL"):
            Git(repo.path).run("fetch", operands=[str(tmp_path), value])
    assert not marker.exists()


def test_git_allows_only_the_supported_transports(tmp_path: Path) -> None:
    """``ext::`` (a URL that runs a command) is refused by git itself."""
    marker = tmp_path / "pwned"
    repo = Repo.init(tmp_path / "repo")
    proc = Git(repo.path).run(
        "fetch", check=False, operands=[f"ext::sh -c touch% {marker}", "main"]
    )
    assert proc.returncode != 0 and not marker.exists()
    assert "transport 'ext' not allowed" in proc.stderr
