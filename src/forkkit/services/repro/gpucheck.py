# SPDX-License-Identifier: Apache-2.0
"""``gpu_check.json`` (``scripts/gpu_check.py``): one type that writes and
reads it. The steps' bodies are what the script measured, kept as JSON.
Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forkkit.output.report import GPU_CHECK, Report


@dataclass(frozen=True)
class GpuCheckDoc(Report):
    """The GPU check: the interpreter, its torch and devices, each step."""

    DOC = GPU_CHECK

    python: str
    verdict: str
    exit_code: int
    environment: dict[str, Any] | None = None  # torch, CUDA, devices
    steps: dict[str, dict[str, Any]] | None = None  # suites, repro
