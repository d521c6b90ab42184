# SPDX-License-Identifier: Apache-2.0
"""The real projects the integration tests run.

``PIN_030``: the fix as it was carried on vLLM 0.30.0 (``pins/0.30.0``: its
three patches, red/green, the #53802 reconciliation, the rebases onto newer
releases). The repository's own ``fork.toml`` has since moved to 0.34.0,
where upstream absorbed the fix and the series is tests-only; its proof is
the main job.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN_030 = ROOT / "pins" / "0.30.0" / "fork.toml"
