# SPDX-License-Identifier: Apache-2.0
"""What ``forkkit repro`` asks the resend script for, and what it answers.

The script's options (mirroring its flags) and its JSON document, parsed into
typed rows; pure, no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from forkkit.errors import ForkkitError

KINDS = ("identical", "extended", "last_token_changed")
SCHEMA = 1


@dataclass(frozen=True)
class ReproOptions:
    """What the reproduction simulates; mirrors the script's flags."""

    block_size: int = 64
    hash_block_size: int = 16
    num_spec: int = 3
    prompt_lens: tuple[int, ...] = (16000, 16001)
    extend: int = 48
    accept: int = 2
    kinds: tuple[str, ...] = KINDS
    max_num_batched_tokens: int = 8192
    model: str = "Qwen/Qwen3.5-0.8B-Base"  # GPU only

    def validate(self) -> ReproOptions:
        """Reject combinations the engine would refuse; return self."""
        where = "forkkit repro"
        positive = {
            "--block-size": self.block_size,
            "--hash-block-size": self.hash_block_size,
            "--num-spec": self.num_spec,
            "--max-num-batched-tokens": self.max_num_batched_tokens,
        }
        for flag, value in positive.items():
            if value <= 0:
                raise ForkkitError(f"{where}: {flag} must be positive, not {value}")
        if self.block_size % self.hash_block_size:
            raise ForkkitError(
                f"{where}: --block-size {self.block_size} is not a multiple of "
                f"--hash-block-size {self.hash_block_size}; pick a divisor"
            )
        if not self.prompt_lens or any(n < 2 for n in self.prompt_lens):
            raise ForkkitError(
                f"{where}: --prompt-lens needs lengths of at least 2 tokens"
            )
        if not 0 <= self.accept <= self.num_spec:
            raise ForkkitError(
                f"{where}: --accept {self.accept} must be between 0 and "
                f"--num-spec {self.num_spec}"
            )
        if self.extend < 1:
            raise ForkkitError(f"{where}: --extend must be at least 1")
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown or not self.kinds:
            raise ForkkitError(
                f"{where}: unknown resend kind(s) {unknown}; use {', '.join(KINDS)}"
            )
        return self

    def gpu_script_args(self) -> list[str]:
        """Flags of scripts/gpu_resend_repro.py (the model decides block sizes)."""
        return [
            "--model",
            self.model,
            "--hash-block-size",
            str(self.hash_block_size),
            "--num-spec",
            str(self.num_spec),
            "--prompt-lens",
            ",".join(map(str, self.prompt_lens)),
            "--extend",
            str(self.extend),
            "--kinds",
            ",".join(self.kinds),
        ]

    def script_args(self) -> list[str]:
        """The script's command-line flags."""
        return [
            "--block-size",
            str(self.block_size),
            "--hash-block-size",
            str(self.hash_block_size),
            "--num-spec",
            str(self.num_spec),
            "--prompt-lens",
            ",".join(map(str, self.prompt_lens)),
            "--extend",
            str(self.extend),
            "--accept",
            str(self.accept),
            "--kinds",
            ",".join(self.kinds),
            "--max-num-batched-tokens",
            str(self.max_num_batched_tokens),
        ]


@dataclass(frozen=True)
class ResendRow:
    """One resend as the script measured it."""

    prompt_len: int
    kind: str
    resend_tokens: int
    cached_tokens: int
    computed_at_first_schedule: int
    recomputed_prompt_tokens: int
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class ScriptRun:
    """The script's JSON document, parsed."""

    vllm_version: str
    config: dict[str, Any]
    rows: tuple[ResendRow, ...]
    seconds: float
    skipped: str = ""  # why the script measured nothing (GPU script only)

    def row(self, prompt_len: int, kind: str) -> ResendRow | None:
        return next(
            (r for r in self.rows if (r.prompt_len, r.kind) == (prompt_len, kind)),
            None,
        )


def _int(d: dict[str, Any], key: str, where: str) -> int:
    value = d.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ForkkitError(f"{where}: '{key}' is {value!r}, expected an integer")
    return value


def parse_script_output(text: str, where: str = "resend_repro.py") -> ScriptRun:
    """Parse the script's stdout: one JSON document, possibly after log lines."""
    start = text.find("{\n")
    if start < 0:
        start = text.find("{")
    try:
        doc = json.loads(text[start:]) if start >= 0 else None
    except json.JSONDecodeError as exc:
        raise ForkkitError(f"{where}: output is not JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise ForkkitError(
            f"{where}: no schema-{SCHEMA} JSON document in its output; "
            "check the script log"
        )
    if doc.get("skipped"):
        return ScriptRun("unknown", {}, (), 0.0, skipped=str(doc["skipped"]))
    rows = []
    for i, raw in enumerate(doc.get("rows") or []):
        w = f"{where} rows[{i}]"
        if not isinstance(raw, dict):
            raise ForkkitError(f"{w}: not an object")
        known = {
            "prompt_len",
            "kind",
            "resend_tokens",
            "cached_tokens",
            "computed_at_first_schedule",
            "recomputed_prompt_tokens",
        }
        rows.append(
            ResendRow(
                prompt_len=_int(raw, "prompt_len", w),
                kind=str(raw.get("kind")),
                resend_tokens=_int(raw, "resend_tokens", w),
                cached_tokens=_int(raw, "cached_tokens", w),
                computed_at_first_schedule=_int(raw, "computed_at_first_schedule", w),
                recomputed_prompt_tokens=_int(raw, "recomputed_prompt_tokens", w),
                extra={k: v for k, v in raw.items() if k not in known},
            )
        )
    if not rows:
        raise ForkkitError(f"{where}: the document has no rows")
    config = doc.get("config")
    return ScriptRun(
        vllm_version=str(doc.get("vllm_version", "unknown")),
        config=config if isinstance(config, dict) else {},
        rows=tuple(rows),
        seconds=float(doc.get("seconds", 0.0)),
    )
