"""The query/key/value projections of an attention layer: one fused QKV GEMM, or MLA's chain (DeepSeek-V2/V3).

Multi-head latent attention (DeepSeek-AI 2024, DeepSeek-V2 arXiv:2405.04434 §2.1.2) projects each token in
steps; as Megatron-Core runs it (``transformer/multi_latent_attention.py``, ``MLASelfAttention`` with the
TransformerEngine layer spec), on one tensor-parallel rank (``t`` = TP, ``T`` tokens, ``a`` heads):

* query: ``linear_q_down_proj`` ``(T, r_q, h)`` — a ``TELinear`` with ``parallel_mode='duplicated'``, so every
  TP rank runs the whole GEMM — then the RMSNorm ``q_layernorm`` on the ``T·r_q`` latent and
  ``linear_q_up_proj`` ``(T, a·d_qk/t, r_q)`` (column-parallel); without a query rank one ``(T, a·d_qk/t, h)``.
* key/value: ``linear_kv_down_proj`` ``(T, r_kv + d_rope, h)`` (duplicated), ``kv_layernorm`` on ``T·r_kv``,
  ``linear_kv_up_proj`` ``(T, a·(d_nope + d_v)/t, r_kv)`` (column-parallel).
* RoPE as Megatron-Core's fused MLA kernels run it (``apply_rope_fusion``, on unless ``--no-rope-fusion``;
  ``fusions/fused_mla_yarn_rope_apply.py``): ``rotary_fwd_q_kernel`` rotates the ``a·d_rope/t`` rotary query
  elements in place, and ``rotary_fwd_kv_kernel`` builds the attention's key and value from the up-projected
  ``kv``: it reads ``a·(d_nope + d_v)/t`` and writes ``a·(d_qk + d_v)/t`` elements per token (the rotated
  ``d_rope`` shared key broadcast to every head); the backward kernels move the same gradients back.
  Counted, like the fused RoPE of a GQA layer, in elements of 4 bytes each way (read + write bf16):
  ``a/t·(d_rope + (d_nope + d_qk + 2·d_v)/2) + d_rope`` per token.

A GQA/MHA layer has the fused ``(T, (a + 2g)·d/t, h)`` QKV GEMM and RoPE on its ``(a + g)·d/t`` q/k elements.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from distcalc.compute.flops import ModelDims

ArrayLike = Any


@dataclass(frozen=True)
class Projections:
    """GEMMs ``(batch, m, n, k)`` of the Q/K/V projections on one rank, and the elementwise work they bring."""

    gemms: list[tuple[Any, Any, Any, Any]]
    latent_norm_elements: ArrayLike  #: elements of the RMSNorms on MLA's latents (0 for GQA/MHA)
    latent_norms: int  #: how many such norm kernels
    rope_elements: ArrayLike  #: q/k elements RoPE rotates (0 without RoPE)


def qkv_projections(dims: ModelDims, tokens: ArrayLike, tp: ArrayLike) -> Projections:
    """The projections of :mod:`this module <distcalc.compute.mla>` for ``tokens`` tokens at TP ``tp``."""
    h, a, t = dims.hidden, dims.heads, np.asarray(tp, dtype=float)
    if not dims.kv_lora_rank:
        rope = tokens * (a + dims.kv_heads) * dims.head_dim / t if dims.rope else 0.0
        return Projections([(1, tokens, np.divide(dims.qkv_width, t), h)], 0.0, 0, rope)
    nope = dims.head_dim - dims.qk_rope_dim
    if dims.q_lora_rank:
        query = [(1, tokens, dims.q_lora_rank, h), (1, tokens, a * dims.head_dim / t, dims.q_lora_rank)]
    else:
        query = [(1, tokens, a * dims.head_dim / t, h)]
    key_value = [(1, tokens, dims.kv_lora_rank + dims.qk_rope_dim, h),
                 (1, tokens, a * (nope + dims.v_head_dim) / t, dims.kv_lora_rank)]
    norms = 2 if dims.q_lora_rank else 1
    latent = tokens * (dims.q_lora_rank + dims.kv_lora_rank)
    kv_assembly = (nope + dims.head_dim + 2 * dims.v_head_dim) / 2.0  # rotary_fwd_kv_kernel, per head
    rope = tokens * (a * (dims.qk_rope_dim + kv_assembly) / t + dims.qk_rope_dim) if dims.rope else 0.0
    return Projections(query + key_value, latent, norms, rope)
