"""Resend reproduction on CPU: vLLM's real Scheduler + KVCacheManager, no model.

Standalone (NOT imported by forkkit): run it with the vLLM test venv's python and
the vLLM tree (fork or base) on PYTHONPATH. ``forkkit repro`` runs it twice.

Setup, as the engine builds it for a hybrid attention + Mamba model in Mamba
cache mode "align" with MTP: a real ``VllmConfig`` (a tiny Qwen3-Next
``config.json`` written to a temp dir stands in for the checkpoint, so MTP is
configured exactly as ``--speculative-config '{"method": "mtp"}'`` would), a
full-attention group plus a Mamba "align" group with ``num_speculative_blocks``,
block sizes resolved by ``resolve_kv_cache_block_sizes`` and the real
``Scheduler``. Requests and the KV cache config come from vLLM's own test
helpers (``tests/v1/core/test_prefix_caching.py``), imported from the tree.

Per prompt length and resend kind, on a fresh scheduler: run the seed prompt to
completion (chunked prefill, then MTP decode with drafts fed back as the engine
core does), send the resend, and read the cached tokens the engine reports
(``prefill_stats.num_cached_tokens``) and the computed tokens at its first
schedule (``num_computed_tokens``); one JSON document on stdout (``--json-out``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

try:  # forkkit's tests import this module from the package
    from forkkit.scripts import resend_config as config
except ImportError:  # run as a file by vLLM's interpreter, beside its sibling
    import resend_config as config  # type: ignore[no-redef]

# vLLM logs to stdout by default; keep stdout for the JSON document.
os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

RESEND_KINDS = ("identical", "extended", "last_token_changed")
# Generated tokens: far from the prompt ids and from make_request's EOS (100).
GENERATED_BASE = 500_000
WRONG_DRAFT = 7

EAGLE_MODES = ("default", "drop")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The flags; no defaults: ``forkkit repro`` passes every value."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    flag = p.add_argument
    flag("--block-size", type=int, required=True, help="attention = Mamba")
    flag("--hash-block-size", type=int, required=True, help="prefix_match_unit")
    flag("--num-spec", type=int, required=True, help="MTP draft tokens")
    flag("--prompt-lens", required=True, help="comma-separated seed lengths")
    flag("--extend", type=int, required=True, help="tokens the extended resend adds")
    flag("--accept", type=int, required=True, help="drafts accepted per step")
    flag("--max-num-batched-tokens", type=int, required=True)
    flag("--kinds", required=True, help=f"subset of {','.join(RESEND_KINDS)}")
    flag(
        "--eagle-mode",
        required=True,
        choices=EAGLE_MODES,
        help="default: the release's own EAGLE handling (lookahead block hashes "
        "since 0.33.0); drop: the trailing-block drop (disable_lookahead_block_"
        "hashes where the release has it, its only mode before)",
    )
    flag("--json-out", type=Path)
    return p.parse_args(argv)


def prompt_tokens(n: int) -> list[int]:
    """The seed prompt: distinct ids, so every hash block is unique."""
    return [1000 + i for i in range(n)]


def resend_prompt(
    kind: str, seed: list[int], output: list[int], *, extend: int
) -> list[int]:
    """The follow-up prompt: identical, extended (a next chat turn), last changed."""
    if kind == "identical":
        return list(seed)
    if kind == "extended":
        tail = (output + [GENERATED_BASE * 2 + i for i in range(extend)])[:extend]
        return seed + tail
    if kind == "last_token_changed":
        return [*seed[:-1], seed[-1] + 1]
    raise ValueError(f"unknown resend kind {kind!r}")


@dataclasses.dataclass
class _Seen:
    """What one request saw while it ran; filled in step by step."""

    truth: list[int]  # the tokens the fake greedy model emits, in order
    first_computed: int | None = None
    engine_cached: int | None = None
    chunks: list[int] = dataclasses.field(default_factory=list)
    output: list[int] = dataclasses.field(default_factory=list)
    steps: int = 0
    accepted_total: int = 0

    def verify(self, drafts: list[int]) -> list[int]:
        """Greedy target: accept the drafts that match the ground truth,
        then emit the next true token (bonus / correction)."""
        done = len(self.output)
        wrong = (i for i, d in enumerate(drafts) if d != self.truth[done + i])
        ok = next(wrong, len(drafts))
        self.accepted_total += ok
        return self.truth[done : done + ok + 1]


class Harness:
    """One fresh scheduler; drives requests to completion like the engine core."""

    def __init__(self, args: argparse.Namespace, vllm_config: Any, kv_cfg: Any) -> None:
        from vllm.v1.core.kv_cache_utils import resolve_kv_cache_block_sizes
        from vllm.v1.core.sched.scheduler import Scheduler
        from vllm.v1.core.single_type_kv_cache_manager import register_all_kvcache_specs
        from vllm.v1.structured_output import StructuredOutputManager

        register_all_kvcache_specs(vllm_config)
        sched_bs, hash_bs = resolve_kv_cache_block_sizes(kv_cfg, vllm_config)
        if hash_bs != args.hash_block_size:
            raise SystemExit(
                f"resolved hash block size {hash_bs} != requested "
                f"{args.hash_block_size}; pick a divisor of --block-size"
            )
        self.sched_bs, self.hash_bs = sched_bs, hash_bs
        self.scheduler = Scheduler(
            vllm_config=vllm_config,
            kv_cache_config=kv_cfg,
            structured_output_manager=StructuredOutputManager(vllm_config),
            block_size=sched_bs,
            hash_block_size=hash_bs,
            log_stats=True,
        )
        self.accept, self.num_spec = args.accept, args.num_spec

    def run(self, req_id: str, tokens: list[int]) -> dict[str, Any]:
        """Add one request and step until it finishes; return what it saw."""
        from tests.v1.core.test_prefix_caching import make_request
        from vllm.utils.hashing import sha256

        # As the engine builds its requests: since vLLM 0.33.0 a request's
        # block hashes cover the lookahead tokens the scheduler was given.
        ahead = int(getattr(self.scheduler, "num_hash_lookahead_tokens", 0) or 0)
        extra = {"num_hash_lookahead_tokens": ahead} if ahead else {}
        request = make_request(req_id, tokens, self.hash_bs, sha256, **extra)
        self.scheduler.add_request(request)
        seen = _Seen(truth=[GENERATED_BASE + i for i in range(request.max_tokens + 8)])
        while not request.is_finished():
            seen.steps += 1
            if seen.steps > 10_000:
                raise SystemExit(f"{req_id}: no progress after 10000 steps")
            self._step(req_id, request, seen)
        return {
            "prompt_tokens": len(tokens),
            "computed_at_first_schedule": seen.first_computed,
            "engine_cached_tokens": seen.engine_cached,
            "chunk_ends": [c for c in seen.chunks if c <= len(tokens)],
            "output_tokens": seen.output,
            "steps": seen.steps,
            "accepted_drafts": seen.accepted_total,
        }

    def _step(self, req_id: str, request: Any, seen: _Seen) -> None:
        """One engine-core step: schedule, fake the model, feed drafts back."""
        from vllm.v1.outputs import DraftTokenIds, ModelRunnerOutput

        sched = self.scheduler
        out = sched.schedule()
        for new in out.scheduled_new_reqs:
            if new.req_id == req_id and seen.first_computed is None:
                seen.first_computed = new.num_computed_tokens
        if out.num_scheduled_tokens.get(req_id, 0) == 0:
            step = seen.steps
            raise SystemExit(f"{req_id}: scheduler scheduled nothing (step {step})")
        drafts = list(out.scheduled_spec_decode_tokens.get(req_id, []))
        seen.chunks.append(request.num_computed_tokens)
        # The runner discards what it samples for a partial prefill.
        sampled = [] if request.is_prefill_chunk else seen.verify(drafts)
        given = {
            "req_ids": [req_id],
            "req_id_to_index": {req_id: 0},  # gone from the output in 0.34.0
            "sampled_token_ids": [sampled],
            "logprobs": None,
            "prompt_logprobs_dict": {},
            "pooler_output": [],
        }
        known = getattr(ModelRunnerOutput, "__dataclass_fields__", given)
        mro = ModelRunnerOutput(**{k: v for k, v in given.items() if k in known})
        for eco in sched.update_from_output(out, mro).values():
            for o in eco.outputs:
                if o.request_id == req_id:
                    seen.output.extend(o.new_token_ids)
                    if o.prefill_stats is not None and seen.engine_cached is None:
                        seen.engine_cached = o.prefill_stats.num_cached_tokens
        if not request.is_finished() and seen.output:
            done = len(seen.output)
            k = self.num_spec
            draft = seen.truth[done : done + min(self.accept, k)]
            draft += [WRONG_DRAFT] * (k - len(draft))
            sched.update_draft_token_ids(DraftTokenIds([req_id], [draft]))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    for k in kinds:
        if k not in RESEND_KINDS:
            raise SystemExit(f"--kinds: unknown kind {k!r} (known: {RESEND_KINDS})")
    if args.block_size % args.hash_block_size:
        raise SystemExit("--block-size must be a multiple of --hash-block-size")
    start = time.monotonic()
    import vllm

    with tempfile.TemporaryDirectory(prefix="resend-repro-model-") as tmp:
        model_dir = Path(tmp)
        (model_dir / "config.json").write_text(json.dumps(config.STUB_MODEL_CONFIG))
        vllm_config, kv_cfg = config.build_configs(args, model_dir)
    rows, sched_bs, hash_bs = measure(args, kinds, (vllm_config, kv_cfg))
    lookahead = int(getattr(vllm_config, "num_hash_lookahead_tokens", 0) or 0)
    doc = {
        "schema": 1,
        "vllm_version": getattr(vllm, "__version__", "unknown"),
        "vllm_path": str(Path(vllm.__file__).parent.parent),
        "config": {
            "block_size": args.block_size,
            "hash_block_size": hash_bs or args.hash_block_size,
            "scheduler_block_size": sched_bs,
            "num_speculative_tokens": args.num_spec,
            "speculative_method": "mtp",
            "eagle_mode": args.eagle_mode,
            # what the engine did: lookahead hashes (tokens past each block
            # its hash covers) or the trailing-block drop
            "hash_lookahead_tokens": lookahead,
            "eagle_block_drop": lookahead == 0,
            "cpu_triton_guard_lifted": config.TRITON_GUARD_LIFTED,
            "mamba_cache_mode": "align",
            "accepted_drafts_per_step": args.accept,
            "extend": args.extend,
            "max_num_batched_tokens": args.max_num_batched_tokens,
            "prompt_lens": config.lens(args),
        },
        "rows": rows,
        "seconds": round(time.monotonic() - start, 2),
    }
    text = json.dumps(doc, indent=2)
    if args.json_out:
        args.json_out.write_text(text + "\n")
    print(text)
    return 0


def measure(
    args: argparse.Namespace, kinds: list[str], configs: tuple[Any, Any]
) -> tuple[list[dict[str, Any]], int, int]:
    """Each prompt length x kind on a fresh scheduler: the rows, and the
    scheduler and hash block sizes the last one resolved (0, 0 if none ran)."""
    from vllm.config import set_current_vllm_config

    rows: list[dict[str, Any]] = []
    sched_bs = hash_bs = 0
    with set_current_vllm_config(configs[0]):
        for n in config.lens(args):
            seed = prompt_tokens(n)
            for kind in kinds:
                h = Harness(args, *configs)
                sched_bs, hash_bs = h.sched_bs, h.hash_bs
                first = h.run(f"seed-{n}-{kind}", seed)
                tokens = resend_prompt(
                    kind, seed, first["output_tokens"], extend=args.extend
                )
                again = h.run(f"resend-{n}-{kind}", tokens)
                rows.append(row(kind, first, again))
                cached = f"{again['engine_cached_tokens']}/{len(tokens)}"
                print(f"[resend_repro] {n} {kind}: cached {cached}", file=sys.stderr)
                sys.stderr.flush()
    return rows, sched_bs, hash_bs


def row(kind: str, first: dict[str, Any], again: dict[str, Any]) -> dict[str, Any]:
    """One resend's row of the JSON document: ``first`` ran the seed prompt,
    ``again`` the resend (what :meth:`Harness.run` returns)."""
    cached, resend_tokens = again["engine_cached_tokens"], again["prompt_tokens"]
    recomputed = resend_tokens - cached if cached is not None else None
    return {
        "prompt_len": first["prompt_tokens"],
        "kind": kind,
        "resend_tokens": resend_tokens,
        "cached_tokens": cached,
        "computed_at_first_schedule": again["computed_at_first_schedule"],
        "recomputed_prompt_tokens": recomputed,
        "seed_cached_tokens": first["engine_cached_tokens"],
        "seed_chunk_ends": first["chunk_ends"],
        "resend_chunk_ends": again["chunk_ends"],
        "seed_output_tokens": len(first["output_tokens"]),
        "seed_steps": first["steps"],
        "seed_accepted_drafts": first["accepted_drafts"],
    }


if __name__ == "__main__":
    sys.exit(main())
