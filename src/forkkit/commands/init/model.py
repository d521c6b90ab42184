# SPDX-License-Identifier: Apache-2.0
"""``forkkit init``: the new project's files (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from forkkit.output.verdicts import ExitTable
from forkkit.pin import GitPin
from forkkit.upstream.torchpin import TorchPin

Verdict = Literal["started"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={"started": (0, "fork.toml and patches/series are written; what next")},
    errors="fork.toml exists already, the release is not on the index, ...",
)
# where a project's upstream lives, for the git source and reconcile's pulls
GIT_URLS = {"vllm": "https://github.com/vllm-project/vllm.git"}
SERIES = (
    "# The patches of the fork, in order (forkkit fix add appends to it).\n"
    "# Each carries the trailer 'Forkkit-Fix: ID' naming its [[fix]].\n"
)


@dataclass(frozen=True, kw_only=True)
class Pin:
    """The release a new project pins, as its index publishes it."""

    name: str
    version: str
    sha256: str
    index_url: str
    trust: str  # where the sha256 comes from, one line


def _toml_str(value: str) -> str:
    """A TOML basic string of ``value`` (quotes and backslashes escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sdist_upstream(pin: Pin) -> str:
    """fork.toml's ``[upstream]`` of a release: its sdist's sha256 and why."""
    git = GIT_URLS.get(pin.name)
    git_lines = f'git_url = "{git}"\ngit_rev = "v{pin.version}"\n' if git else ""
    return (
        "[upstream]\n"
        f'name = "{pin.name}"\n'
        'source = "sdist"\n'
        f'version = "{pin.version}"\n'
        f"# {pin.trust}\n"
        f'sha256 = "{pin.sha256}"\n'
        f'index_url = "{pin.index_url}"\n'
        f"{git_lines}"
    )


def git_upstream(name: str, pin: GitPin) -> str:
    """fork.toml's ``[upstream]`` of a git revision, with its commit."""
    return (
        "[upstream]\n"
        f"name = {_toml_str(name)}\n"
        'source = "git"\n'
        f"git_url = {_toml_str(pin.url)}\n"
        f"# {pin.rev} resolved to this commit by forkkit init: the pin\n"
        f"git_rev = {_toml_str(pin.rev)}\n"
        f'git_commit = "{pin.commit}"\n'
    )


def fork_toml(*, upstream: str, torch: TorchPin) -> str:
    """A new project's ``fork.toml``: the pin (``upstream``, its table), an
    empty series, the CPU test environment vLLM's suites run in with the
    release's own torch; no fix yet."""
    return (
        "# Written by forkkit init: what upstream the fork patches, its fixes,\n"
        "# and the environment their tests run in.\n\n"
        f"{upstream}\n"
        "[patches]\n"
        'dir = "patches"\n'
        'series = "patches/series"\n\n'
        "# One [[fix]] table per fix: 'forkkit fix add ID PATCH...' writes it.\n\n"
        "[testenv]\n"
        "# CPU-only environment for the suites: no compiled extensions.\n"
        f"# torch: {torch.source} (always a CPU build)\n"
        f"torch = {_toml_str(torch.spec)}\n"
        'requirements = ["requirements/common.txt"]\n'
        'extra = ["pytest", "pytest-asyncio", "tblib"]\n'
        'env = { VLLM_TARGET_DEVICE = "cpu" }\n'
        "# Tests this environment cannot run (the Hub, Triton), each with its reason.\n"
        "deselect = []\n\n"
        "[workdir]\n"
        'path = ".forkkit"\n'
    )
