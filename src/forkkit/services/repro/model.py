# SPDX-License-Identifier: Apache-2.0
"""``forkkit repro``'s vocabulary: options, the script's answer, base vs fix.

The options (the one place their defaults live; the scripts take every value
as a flag), the script's JSON document parsed into typed rows, the pairing of
base and fix rows, and the verdict. Pure, no I/O.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from forkkit.errors import ForkkitError

KINDS = ("identical", "extended", "last_token_changed")
# default: the release's own EAGLE handling (lookahead block hashes since vLLM
# 0.33.0); drop: the trailing-block drop (its fallback, the only mode before)
EAGLE_MODES = ("default", "drop")
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
    eagle_mode: str = "default"
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
        if self.eagle_mode not in EAGLE_MODES:
            raise ForkkitError(
                f"{where}: --eagle-mode {self.eagle_mode!r}; use "
                + " or ".join(EAGLE_MODES)
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
        return self._flags(GPU_FLAGS)

    def script_args(self) -> list[str]:
        """The script's command-line flags."""
        return self._flags(CPU_FLAGS)

    def _flags(self, names: tuple[str, ...]) -> list[str]:
        """``--flag value`` for each field named; tuples comma-separated."""
        out: list[str] = []
        for name in names:
            value = getattr(self, name)
            text = ",".join(map(str, value)) if isinstance(value, tuple) else value
            out += ["--" + name.replace("_", "-"), str(text)]
        return out


# Named setups (``forkkit repro --preset NAME``): the options a measurement
# used; flags given next to a preset override its values.
PRESETS: dict[str, ReproOptions] = {
    # The seed PR's real-model run: Qwen3.5-0.8B (hybrid GDN + attention) in
    # Mamba align mode, MTP 3, 16-token hashes, the 560-token attention blocks
    # the engine picks for it; the 16,000-token identical resend cached 15,120
    # tokens on base and 15,984 with the fix.
    "qwen3.5-0.8b": ReproOptions(
        block_size=560,
        hash_block_size=16,
        num_spec=3,
        prompt_lens=(16000,),
        model="Qwen/Qwen3.5-0.8B-Base",
    ),
}


def preset_options(name: str | None, given: dict[str, Any]) -> ReproOptions:
    """A preset's options (the defaults without one), overridden by ``given``
    (field name -> value; None means not given), validated."""
    if name is not None and name not in PRESETS:
        raise ForkkitError(
            f"forkkit repro: unknown preset {name!r}; use {', '.join(PRESETS)}"
        )
    start = PRESETS[name] if name is not None else ReproOptions()
    chosen = {k: v for k, v in given.items() if v is not None}
    return replace(start, **chosen).validate()


def rerun_args(opts: ReproOptions, *, gpu: bool) -> list[str]:
    """The fewest ``forkkit repro`` flags that set ``opts`` again: the preset
    it equals, else each option that differs from the defaults."""
    for name, preset in PRESETS.items():
        if preset == opts:
            return ["--preset", name]
    default = ReproOptions()
    names = tuple(
        n
        for n in (GPU_FLAGS if gpu else CPU_FLAGS)
        if getattr(opts, n) != getattr(default, n)
    )
    return opts._flags(names)


# The options each script takes, in the order they are passed.
CPU_FLAGS = (
    "block_size",
    "hash_block_size",
    "num_spec",
    "prompt_lens",
    "extend",
    "accept",
    "kinds",
    "max_num_batched_tokens",
    "eagle_mode",
)
GPU_FLAGS = ("model", "hash_block_size", "num_spec", "prompt_lens", "extend", "kinds")


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


@dataclass(frozen=True)
class Comparison:
    """Base vs fix for one resend."""

    prompt_len: int
    kind: str
    resend_tokens: int
    base_cached: int | None
    fix_cached: int | None
    base_match: bool | None = None  # GPU: warm output ids == cold ones
    fix_match: bool | None = None

    @property
    def base_recomputed(self) -> int | None:
        return (
            None if self.base_cached is None else self.resend_tokens - self.base_cached
        )

    @property
    def fix_recomputed(self) -> int | None:
        return None if self.fix_cached is None else self.resend_tokens - self.fix_cached

    @property
    def gained(self) -> int | None:
        if self.base_cached is None or self.fix_cached is None:
            return None
        return self.fix_cached - self.base_cached


def _match(row: ResendRow | None) -> bool | None:
    value = row.extra.get("warm_matches_cold") if row else None
    return value if isinstance(value, bool) else None


def compare(base: ScriptRun | None, fix: ScriptRun) -> list[Comparison]:
    """Pair up the rows of both runs (fix order); a missing base row is None."""
    out = []
    for r in fix.rows:
        b = base.row(r.prompt_len, r.kind) if base else None
        out.append(
            Comparison(
                prompt_len=r.prompt_len,
                kind=r.kind,
                resend_tokens=r.resend_tokens,
                base_cached=b.cached_tokens if b else None,
                fix_cached=r.cached_tokens,
                base_match=_match(b),
                fix_match=_match(r),
            )
        )
    return out


@dataclass(frozen=True)
class ReproResult:
    """Everything the report needs."""

    title: str
    upstream: str
    options: ReproOptions
    fix: ScriptRun
    base: ScriptRun | None
    fix_commit: str
    base_commit: str
    runtime_files: tuple[str, ...]
    commands: tuple[str, ...]
    gpu: bool = False
    fix_tree: str = ""  # the tree ids the two runs actually ran on
    base_tree: str = ""

    @property
    def comparisons(self) -> list[Comparison]:
        return compare(self.base, self.fix)

    @property
    def complete(self) -> bool:
        """Whether every resend was measured on base and on the fix."""
        return self.base is not None and all(
            c.base_cached is not None and c.fix_cached is not None
            for c in self.comparisons
        )

    @property
    def mismatch(self) -> bool:
        """GPU: whether some warm resend's output differs from the cold one's."""
        return any(
            m is False for c in self.comparisons for m in (c.base_match, c.fix_match)
        )

    @property
    def proven(self) -> bool:
        """Exit 0: a complete base-vs-fix measurement (GPU: outputs agree)."""
        return not self.fix.skipped and self.complete and not self.mismatch
