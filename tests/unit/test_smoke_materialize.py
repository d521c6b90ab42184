"""Materialize a synthetic fork end to end (sdist source)."""

from forkkit.config import ForkConfig
from forkkit.forktree import materialize


def test_materialize_toy(toy_project: ForkConfig) -> None:
    tree = materialize(toy_project)
    git = tree.git
    assert git.out("rev-list", "--count", "HEAD") == "2"
    assert git.rev("base") == tree.base
    assert "return n\n" in (tree.path / "toy/calc.py").read_text()
    assert "n - 1" in git.out("show", "base:toy/calc.py")
