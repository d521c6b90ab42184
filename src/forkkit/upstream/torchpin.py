# SPDX-License-Identifier: Apache-2.0
"""The torch a release's CPU build pins: the test venv's torch comes from it.

vLLM names its CPU torch in ``requirements/cpu.txt`` (one line per platform,
chosen by its environment marker: ``torch==2.14.0+cpu; platform_machine ==
"x86_64" ...``), else in ``pyproject.toml``'s build requirements. The first
line whose marker holds on this machine wins; where the release names no
CPU build (``+cpu``) and this is x86-64 Linux, the CPU build of that
version is asked for, so pip can never pull a CUDA torch for the suites.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Callable
from dataclasses import dataclass

from packaging.markers import InvalidMarker
from packaging.requirements import InvalidRequirement, Requirement

DEFAULT_TORCH = "torch==2.13.0"  # when the release names none (its CPU build)
_PYPROJECT_TORCH = re.compile(r"""["']\s*(torch\s*==\s*[\w.+]+)\s*["']""")


@dataclass(frozen=True, kw_only=True)
class TorchPin:
    """The test venv's torch and where it comes from (a line of fork.toml)."""

    spec: str  # "torch==2.14.0+cpu"
    source: str  # "requirements/cpu.txt of vllm 0.34.0", ...


def _pinned(line: str) -> str | None:
    """``torch==V`` of one requirement line whose marker holds here, else None."""
    text = line.split("#", 1)[0].strip()
    if not text or text.startswith("-"):
        return None
    try:
        req = Requirement(text)
    except (InvalidRequirement, InvalidMarker):
        return None
    if req.name.lower() != "torch" or (req.marker and not req.marker.evaluate()):
        return None
    pins = [
        s.version for s in req.specifier if s.operator == "==" and "*" not in s.version
    ]
    return f"torch=={pins[0]}" if len(pins) == 1 else None


def _cpu(spec: str) -> str:
    """The CPU build of ``spec`` on x86-64 Linux (PyPI's torch there is
    CUDA's; elsewhere PyPI's is the CPU build and has no ``+cpu``)."""
    if "+" in spec or platform.system() != "Linux" or platform.machine() != "x86_64":
        return spec
    return f"{spec}+cpu"


def release_torch(read: Callable[[str], str | None], *, release: str) -> TorchPin:
    """The torch of a release's CPU build; ``read(path)`` gives a file of the
    release (None when it has none); ``release`` names it in the source."""
    cpu = read("requirements/cpu.txt")
    for line in (cpu or "").splitlines():
        spec = _pinned(line)
        if spec:
            return TorchPin(
                spec=_cpu(spec), source=f"requirements/cpu.txt of {release}"
            )
    found = _PYPROJECT_TORCH.search(read("pyproject.toml") or "")
    if found:
        spec = re.sub(r"\s+", "", found.group(1))
        return TorchPin(spec=_cpu(spec), source=f"pyproject.toml of {release}")
    return TorchPin(
        spec=_cpu(DEFAULT_TORCH),
        source=f"forkkit's default: {release} names no torch for its CPU build",
    )
