# SPDX-License-Identifier: Apache-2.0
"""``forkkit repro``'s command line: parse the options, run, print the report."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from forkkit.cliopts import add_dest_option, add_upstream_options
from forkkit.config import ForkConfig
from forkkit.errors import ForkkitError
from forkkit.line import Line
from forkkit.output.outcome import Outcome, Shown
from forkkit.output.verdicts import ExitTable
from forkkit.services.repro.model import (
    KINDS,
    PRESETS,
    ReproOptions,
    ReproResult,
    preset_options,
)
from forkkit.services.repro.render import render_markdown
from forkkit.services.repro.run import (
    GPU_SCRIPT,
    STEM,
    STEM_GPU,
    reproduce,
)

Verdict = Literal["proven", "unproven"]
EXITS: ExitTable[Verdict] = ExitTable(
    rows={
        "proven": (0, "a complete base-vs-fix measurement (GPU: outputs agree)"),
        "unproven": (
            1,
            "a resend was not measured on base and fix, the GPU outputs "
            "disagree, or the GPU script skipped (no CUDA device)",
        ),
    }
)
_PARTIAL = "repro: partial result: some resends were not measured on base and fix"


def verdict_of(result: ReproResult) -> Verdict:
    """``proven`` only for a complete base-vs-fix measurement."""
    return "proven" if result.proven else "unproven"


def _ints(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.replace(",", " ").split())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a list of integers: {text!r}") from None


def _kinds(text: str) -> tuple[str, ...]:
    return tuple(k for k in text.replace(",", " ").split() if k)


# One flag per ReproOptions field (``--block-size`` for ``block_size``), in
# --help order: its type and help. The defaults are ReproOptions' own.
OPTION_FLAGS: dict[str, tuple[Callable[[str], Any], str | None]] = {
    "model": (str, "GPU: model or local path"),
    "block_size": (int, None),
    "hash_block_size": (int, None),
    "num_spec": (int, "MTP draft tokens"),
    "prompt_lens": (_ints, "seed prompt lengths, e.g. 16000,16001"),
    "extend": (int, "tokens the extended resend adds"),
    "accept": (int, "drafts accepted per step"),
    "kinds": (_kinds, f"subset of {','.join(KINDS)}"),
    "max_num_batched_tokens": (int, None),
    "eagle_mode": (
        str,
        "default (the release's own EAGLE handling: lookahead block hashes since "
        "vLLM 0.33.0) or drop (the trailing-block drop, its fallback)",
    ),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Resend reproduction, base vs fix: on CPU with vLLM's real Scheduler and "
        "KVCacheManager (default), or with a real model on a GPU (--gpu)."
    )
    add_upstream_options(parser)
    add_dest_option(parser)
    parser.add_argument(
        "--out",
        type=Path,
        help="report folder, replaced by each run (default: <workdir>/reports/repro)",
    )
    parser.add_argument(
        "--gpu",
        action="store_true",
        help=f"run {GPU_SCRIPT} with FORKKIT_TESTENV_PYTHON (a CUDA vllm env)",
    )
    parser.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        help="a named setup (its options; flags given beside it override them)",
    )
    # No argparse defaults: ReproOptions (or the preset) fills what is not given.
    for name, (kind, text) in OPTION_FLAGS.items():
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=kind, help=text)
    parser.add_argument(
        "--timeout", type=float, default=1800.0, help="seconds per script run"
    )


def options(args: argparse.Namespace) -> ReproOptions:
    """The validated options the flags ask for."""
    given = {f.name: getattr(args, f.name) for f in fields(ReproOptions)}
    return preset_options(getattr(args, "preset", None), given)


@dataclass(frozen=True, kw_only=True)
class Request:
    """A resend reproduction, as asked."""

    opts: ReproOptions
    dest: Path | None
    out: Path | None
    gpu: bool
    timeout: float


def request(args: argparse.Namespace) -> Request:
    if args.gpu and not os.environ.get("FORKKIT_TESTENV_PYTHON"):
        raise ForkkitError(
            "forkkit repro --gpu: FORKKIT_TESTENV_PYTHON is not set, so nothing "
            "can run; point it at the python of a CUDA environment with vllm"
        )
    return Request(
        opts=options(args),
        dest=args.dest,
        out=args.out,
        gpu=args.gpu,
        timeout=args.timeout,
    )


def run(cfg: ForkConfig, req: Request) -> Outcome:
    """Reproduce; the Markdown (also the job summary), or why nothing was
    measured; 0 only for a complete measurement."""
    from forkkit.fork.tree import materialize

    tree = materialize(cfg, dest=req.dest)
    result = reproduce(
        Line.of(cfg), tree, req.opts, out_dir=req.out, gpu=req.gpu, timeout=req.timeout
    )
    verdict = verdict_of(result)
    if result.fix.skipped:
        return Outcome(code=EXITS.code(verdict), out=f"SKIPPED: {result.fix.skipped}")
    markdown = render_markdown(result)
    stem = STEM_GPU if req.gpu else STEM
    return Outcome(
        code=EXITS.code(verdict),
        out=markdown,
        report=Shown(cfg.work.report_dest(stem, out=req.out), stem, markdown),
        notes=() if result.complete else (_PARTIAL,),
    )
