# SPDX-License-Identifier: Apache-2.0
"""The engine configuration ``resend_repro.py`` runs vLLM's scheduler with.

Standalone like the script (NOT imported by forkkit itself): a real
``VllmConfig`` for MTP on a tiny hybrid checkpoint config, and vLLM's hybrid
test ``KVCacheConfig``, across the vLLM releases forkkit measures (0.30.0 to
0.34.0: the align-mode group's name, the CPU platform's Triton guard, the
EAGLE lookahead fallback).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

# A tiny hybrid (Gated DeltaNet + full attention) checkpoint config with one MTP
# layer: enough for ModelConfig/SpeculativeConfig, never loaded as weights.
STUB_MODEL_CONFIG: dict[str, Any] = {
    "architectures": ["Qwen3NextForCausalLM"],
    "model_type": "qwen3_next",
    "vocab_size": 1024,
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "shared_expert_intermediate_size": 32,
    **{"num_experts": 4, "num_experts_per_tok": 2},
    "num_hidden_layers": 4,
    "full_attention_interval": 4,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,
    "linear_num_value_heads": 2,
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 32,
    "linear_value_head_dim": 32,
    "linear_conv_kernel_dim": 4,
    "num_nextn_predict_layers": 1,
    "max_position_embeddings": 1 << 20,
    "torch_dtype": "bfloat16",
    "eos_token_id": 100,
}


def _lift_cpu_triton_guard() -> bool:
    """Let the CPU platform build a config without triton-cpu.

    Since vLLM 0.34.0 the x86 CPU platform refuses any config without Triton,
    which its model runner needs. This script runs no kernel and no model,
    only the scheduler and the KV cache manager, so the guard is lifted, only
    after it refused, and the report says so. Returns whether it was.
    """
    try:
        import vllm.triton_utils as triton_utils
    except ImportError:
        return False
    if getattr(triton_utils, "HAS_TRITON", True):
        return False
    triton_utils.HAS_TRITON = True
    return True


TRITON_GUARD_LIFTED = False


def build_configs(args: argparse.Namespace, model_dir: Path) -> tuple[Any, Any]:
    """The VllmConfig and hybrid KVCacheConfig the engine would build."""
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_utils import init_none_hash

    global TRITON_GUARD_LIFTED
    init_none_hash(sha256)
    max_len = max(lens(args)) + args.extend + 256
    max_len = (max_len + args.block_size - 1) // args.block_size * args.block_size
    try:
        vllm_config = _vllm_config(args, model_dir, max_len)
    except RuntimeError as exc:
        if "Triton" not in str(exc) or not _lift_cpu_triton_guard():
            raise
        TRITON_GUARD_LIFTED = True
        vllm_config = _vllm_config(args, model_dir, max_len)
    # Platform hooks may round sizes; the scheduler reads cache_config.block_size.
    vllm_config.cache_config.block_size = args.block_size
    vllm_config.cache_config.mamba_block_size = args.block_size
    num_blocks = 6 * (max_len // args.block_size) + 64
    vllm_config.cache_config.num_gpu_blocks = num_blocks
    return vllm_config, _kv_cache_config(args, num_blocks)


def lens(args: argparse.Namespace) -> list[int]:
    return [int(x) for x in args.prompt_lens.split(",")]


def _vllm_config(args: argparse.Namespace, model_dir: Path, max_len: int) -> Any:
    """MTP on the stub checkpoint, Mamba "align", chunked prefill."""
    from vllm.config import (
        CacheConfig,
        ModelConfig,
        ParallelConfig,
        SchedulerConfig,
        SpeculativeConfig,
        VllmConfig,
    )

    model_config = ModelConfig(
        model=str(model_dir),
        dtype="bfloat16",
        seed=0,
        skip_tokenizer_init=True,
        max_model_len=max_len,
    )
    parallel = ParallelConfig()
    fallback: dict[str, Any] = {}
    fields = getattr(SpeculativeConfig, "__dataclass_fields__", {})
    if args.eagle_mode == "drop" and "disable_lookahead_block_hashes" in fields:
        fallback["disable_lookahead_block_hashes"] = True
    spec = SpeculativeConfig(
        method="mtp",
        num_speculative_tokens=args.num_spec,
        target_model_config=model_config,
        target_parallel_config=parallel,
        **fallback,
    )
    cache = CacheConfig(
        block_size=args.block_size,
        mamba_block_size=args.block_size,
        enable_prefix_caching=True,
        mamba_cache_mode="align",
        prefix_match_unit=args.hash_block_size,
    )
    return VllmConfig(
        model_config=model_config,
        cache_config=cache,
        parallel_config=parallel,
        speculative_config=spec,
        scheduler_config=SchedulerConfig(
            max_num_seqs=16,
            max_num_batched_tokens=args.max_num_batched_tokens,
            max_model_len=max_len,
            enable_chunked_prefill=True,
            is_encoder_decoder=False,
            watermark=0.0,
        ),
    )


def _kv_cache_config(args: argparse.Namespace, num_blocks: int) -> Any:
    """vLLM's hybrid test config: full attention + Mamba "align" with MTP."""
    from tests.v1.core.test_prefix_caching import _make_hybrid_kv_cache_config
    from vllm.v1.kv_cache_interface import MambaSpec

    try:
        kv_cfg = _make_hybrid_kv_cache_config(
            args.block_size, num_blocks, ["full", "mamba_align"]
        )
    except KeyError:  # since 0.34.0 plain "mamba" is the align-mode group
        kv_cfg = _make_hybrid_kv_cache_config(
            args.block_size, num_blocks, ["full", "mamba"]
        )
    groups = []
    for g in kv_cfg.kv_cache_groups:
        if isinstance(g.kv_cache_spec, MambaSpec):
            # As MambaBase.get_kv_cache_spec: one state slot per draft token.
            g = dataclasses.replace(
                g,
                kv_cache_spec=dataclasses.replace(
                    g.kv_cache_spec, num_speculative_blocks=args.num_spec
                ),
            )
        groups.append(g)
    return dataclasses.replace(kv_cfg, kv_cache_groups=groups)
