"""Resend reproduction with a real model on a GPU (the CPU script's twin).

Needs: an NVIDIA GPU, a CUDA build of vLLM 0.30.0 importable by this python
(``pip install vllm==0.30.0``), and the model weights (local path, HF cache, or
network). The fix is tested by overlaying the fork tree's runtime files
(``--overlay TREE --files ...``) over the installed vllm; the engine core runs
in-process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) so the overlay applies to it.

Per prompt length and resend kind, on an emptied prefix cache: generate the
resend prompt cold (reference), empty the cache, run the seed prompt, then the
resend warm. Reports the engine's ``RequestOutput.num_cached_tokens`` for the
warm resend and whether its greedy output token ids equal the cold ones.
Without a GPU, vLLM or the weights it prints ``SKIPPED: <why>`` and exits 0.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import random
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # overlay must reach the core
os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")

KINDS = ("identical", "extended", "last_token_changed")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="Qwen/Qwen3.5-0.8B-Base")
    p.add_argument("--num-spec", type=int, default=3)
    p.add_argument("--hash-block-size", type=int, default=16)
    p.add_argument("--prompt-lens", default="16000,16001")
    p.add_argument("--extend", type=int, default=48)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    p.add_argument("--overlay", type=Path, help="vLLM tree whose --files replace")
    p.add_argument("--files", default="", help="comma-separated runtime files")
    p.add_argument("--no-download", action="store_true", help="local weights only")
    p.add_argument("--json-out", type=Path)
    return p.parse_args(argv)


def emit(doc: dict[str, Any], json_out: Path | None) -> None:
    text = json.dumps(doc, indent=2)
    if json_out:
        json_out.write_text(text + "\n")
    print(text)


def skip(reason: str, json_out: Path | None) -> int:
    """One line on stdout, a machine-readable note in --json-out; exit 0."""
    print(f"SKIPPED: {reason}")
    if json_out:
        json_out.write_text(json.dumps({"schema": 1, "skipped": reason}) + "\n")
    return 0


class _Overlay(importlib.abc.MetaPathFinder):
    """Serve the named vllm modules from another tree's files."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files

    def find_spec(
        self,
        fullname: str,
        path: Any = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        return importlib.util.spec_from_file_location(fullname, file) if file else None


def install_overlay(tree: Path, files: list[str]) -> dict[str, str]:
    """Route imports of ``files`` (paths under ``tree``) to ``tree``."""
    mods: dict[str, Path] = {}
    digests: dict[str, str] = {}
    for f in files:
        path = tree / f
        if not path.is_file() or not f.endswith(".py"):
            raise SystemExit(f"--overlay: {path} is not a Python file")
        mods[f[: -len(".py")].replace("/", ".")] = path
        digests[f] = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    sys.meta_path.insert(0, _Overlay(mods))
    return digests


def resolve_weights(model: str, allow_download: bool) -> str | None:
    """A local path to the weights, or None when they cannot be had."""
    if Path(model).is_dir():
        return model
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    for local_only in (True, False) if allow_download else (True,):
        try:
            return str(snapshot_download(model, local_files_only=local_only))
        except Exception:
            continue
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    try:
        import torch
    except ImportError:
        return skip("torch is not installed in this python", args.json_out)
    if not torch.cuda.is_available():
        return skip(
            "no CUDA GPU visible (torch.cuda.is_available() is False)", args.json_out
        )
    digests: dict[str, str] = {}
    if args.overlay:
        digests = install_overlay(args.overlay, [f for f in args.files.split(",") if f])
    try:
        import vllm
        from vllm import LLM, SamplingParams
    except ImportError as exc:
        return skip(f"vLLM is not importable ({exc})", args.json_out)
    weights = resolve_weights(args.model, not args.no_download)
    if weights is None:
        return skip(f"weights for {args.model} are not available", args.json_out)

    lens = [int(x) for x in args.prompt_lens.split(",")]
    start = time.monotonic()
    llm = LLM(
        model=weights,
        dtype="bfloat16",
        enable_prefix_caching=True,
        mamba_cache_mode="align",
        prefix_match_unit=args.hash_block_size,
        speculative_config={"method": "mtp", "num_speculative_tokens": args.num_spec},
        enforce_eager=True,
        max_num_seqs=1,
        max_model_len=max(lens) + args.extend + args.max_tokens + 64,
        gpu_memory_utilization=args.gpu_memory_utilization,
        seed=0,
    )
    loaded = {
        name: getattr(sys.modules.get(name), "__file__", None)
        for name in (
            "vllm.v1.core.kv_cache_coordinator",
            "vllm.v1.core.single_type_kv_cache_manager",
        )
    }
    cfg = llm.llm_engine.vllm_config.cache_config
    greedy = SamplingParams(
        temperature=0.0, max_tokens=args.max_tokens, ignore_eos=True
    )
    vocab = llm.llm_engine.vllm_config.model_config.get_vocab_size()
    rng = random.Random(0)

    def gen(ids: list[int]) -> tuple[list[int], int | None]:
        (out,) = llm.generate([{"prompt_token_ids": ids}], greedy, use_tqdm=False)
        return list(out.outputs[0].token_ids), out.num_cached_tokens

    rows = []
    for n in lens:
        seed = [rng.randrange(1000, min(vocab, 100_000)) for _ in range(n)]
        for kind in kinds:
            if kind == "identical":
                resend = list(seed)
            elif kind == "extended":
                resend = seed + [
                    rng.randrange(1000, min(vocab, 100_000)) for _ in range(args.extend)
                ]
            else:
                resend = [*seed[:-1], (seed[-1] + 1) % vocab]
            llm.reset_prefix_cache()
            cold, _ = gen(resend)
            llm.reset_prefix_cache()
            gen(seed)
            warm, cached = gen(resend)
            rows.append(
                {
                    "prompt_len": n,
                    "kind": kind,
                    "resend_tokens": len(resend),
                    "cached_tokens": cached,
                    "computed_at_first_schedule": cached,
                    "recomputed_prompt_tokens": None
                    if cached is None
                    else len(resend) - cached,
                    "warm_matches_cold": warm == cold,
                }
            )
            print(
                f"[gpu_resend_repro] {n} {kind}: cached {cached}/{len(resend)}, "
                f"warm==cold {warm == cold}",
                file=sys.stderr,
                flush=True,
            )
    emit(
        {
            "schema": 1,
            "vllm_version": vllm.__version__,
            "vllm_path": str(Path(vllm.__file__).parent),
            "overlay": str(args.overlay) if args.overlay else None,
            "overlay_sha256": digests,
            "loaded_modules": loaded,
            "config": {
                "model": args.model,
                "block_size": cfg.block_size,
                "mamba_block_size": cfg.mamba_block_size,
                "hash_block_size": args.hash_block_size,
                "num_speculative_tokens": args.num_spec,
                "speculative_method": "mtp",
                "mamba_cache_mode": cfg.mamba_cache_mode,
                "max_tokens": args.max_tokens,
                "prompt_lens": lens,
            },
            "rows": rows,
            "all_warm_match_cold": all(r["warm_matches_cold"] for r in rows),
            "seconds": round(time.monotonic() - start, 2),
        },
        args.json_out,
    )
    return 0 if all(r["warm_matches_cold"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
