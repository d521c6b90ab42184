"""The user's global git configuration cannot change what forkkit writes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from forkkit import cli
from forkkit.config import ForkConfig

HOSTILE = """\
[commit]
    gpgSign = true
[user]
    signingKey = NO-SUCH-KEY
[format]
    signOff = true
    suffix = .txt
    coverLetter = true
[diff]
    noprefix = true
    mnemonicPrefix = true
[color]
    ui = always
[log]
    showSignature = true
[core]
    hooksPath = {hooks}
"""


def test_a_hostile_global_git_config_changes_nothing_forkkit_writes(
    toy_project: ForkConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    hooks = home / "hooks"
    hooks.mkdir(parents=True)
    hook = hooks / "commit-msg"
    hook.write_text("#!/bin/sh\necho 'Change-Id: I0' >> \"$1\"\n")
    hook.chmod(0o755)
    (home / ".gitconfig").write_text(HOSTILE.format(hooks=hooks))
    before = {p.name: p.read_bytes() for p in toy_project.patches_dir.iterdir()}
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    conf = ["--config", str(toy_project.path)]
    assert cli.main([*conf, "materialize"]) == 0  # commits: not signed, no hook
    fork = toy_project.work.fork
    (fork / "toy" / "new.py").write_text("NEW = 1\n")
    git = ["git", "-C", str(fork), "-c", "user.name=U", "-c", "user.email=u@x"]
    git += ["-c", "commit.gpgSign=false", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "add", "toy/new.py"], check=True)
    message = "[Misc] new\n\nForkkit-Fix: toy-fix"
    subprocess.run([*git, "commit", "-q", "-m", message], check=True)
    assert cli.main([*conf, "export"]) == 0
    after = {p.name: p.read_bytes() for p in toy_project.patches_dir.iterdir()}
    new = sorted(set(after) - set(before))
    assert new == ["0002-Misc-new.patch"]  # .patch, no cover letter
    old = {n: b for n, b in before.items() if n.endswith(".patch")}
    assert {n: after[n] for n in old} == old  # the old patch untouched
    text = after[new[0]].decode()
    assert "Signed-off-by" not in text and "Change-Id" not in text
    assert "diff --git a/toy/new.py b/toy/new.py" in text and "\x1b[" not in text
