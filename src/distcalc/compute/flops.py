"""The FLOP counts behind MFU and HFU (model dimensions: :class:`distcalc.model.dims.ModelDims`).

MFU / HFU (Korthikanti et al. 2022, arXiv:2205.05198, Appendix A). For a GPT layer stack with
``f = 4h`` the model FLOPs of one step are

    F_model = 72·B·L·s·h²·(1 + s/(6h) + V/(12·h·L))

(B sequences of s tokens, L layers, hidden h, vocabulary V): 3 × the forward pass (forward + backward
= 2 × forward), where the forward of one token costs 2 FLOPs per weight of the QKV, output and MLP GEMMs,
``4·s·h`` for the attention scores and values (the full s × s matrix, no causal saving — the paper's
convention) and ``2·h·V`` for the logits. The general form used here, valid for GQA, gated MLPs and MoE,
is ``F_model = 3·B·s·(Σ_layers F_layer_fwd/token + 2·h·V)`` with F_layer_fwd/token = 2 × (weights a
token touches: Q/K/V, output, MLP or router + top-k experts + shared experts) + 2·s·(a·d_qk + a·d_v).
This reduces exactly to the formula above for GPT-3-style models (tests pin it).

HFU adds the recomputed forward work (hardware FLOPs) in the paper's convention: selective recomputation
adds the attention-core term once more, ``72·B·L·s·h²·(1 + s/(3h) + V/(12hL))`` (App. A; i.e. + 3 × the
core's forward FLOPs, which reproduces the published HFU/MFU ratios of Table 5, e.g. 52.8/51.4 for 175B);
full recomputation re-runs every layer's forward, ``+ F_model_layers/3``.
MFU = F_model / (step_time · N_gpus · peak); HFU = F_hardware / (step_time · N_gpus · peak).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.model.dims import ModelDims, model_dims  # noqa: F401  (re-exported by distcalc.compute)
from distcalc.parallel import Recompute

ArrayLike = Any


def attended_pairs(seq_len: ArrayLike, window: ArrayLike) -> ArrayLike:
    """(query, key) pairs of one causal sequence: ``s²/2`` or ``s·w − w²/2`` when ``0 < w < s``
    (``window`` 0 = no window; sliding-window attention, :mod:`distcalc.model.blocks`)."""
    s = np.asarray(seq_len, dtype=float)
    w = np.asarray(window, dtype=float)
    banded = (w > 0) & (w < s)
    return np.where(banded, s * w - w * w / 2.0, s * s / 2.0)


def effective_key_length(seq_len: ArrayLike, window: ArrayLike) -> ArrayLike:
    """Keys per query in the MFU convention, ``2·pairs(s, w)/s``: s without a window, ``2w − w²/s`` with one."""
    s = np.asarray(seq_len, dtype=float)
    return 2.0 * attended_pairs(s, window) / s


def attention_core_flops_per_token(dims: ModelDims, seq_len: ArrayLike) -> ArrayLike:
    """Forward FLOPs of QKᵀ and P·V per token, full s×s (Korthikanti convention): ``2·s·a·(d_qk + d_v)``;
    with a sliding window w < s, s becomes the effective key length ``2w − w²/s``
    (:func:`effective_key_length`: twice the attended pairs, as s is twice s²/2)."""
    keys = effective_key_length(seq_len, dims.sliding_window) if dims.sliding_window else seq_len
    return 2.0 * np.multiply(keys, dims.heads * (dims.head_dim + dims.v_head_dim))


def layer_gemm_flops_per_token(dims: ModelDims, moe: bool) -> float:
    """Forward FLOPs per token of one layer's weight GEMMs: 2 × weights touched by a token."""
    h = dims.hidden
    attn = h * dims.qkv_width + dims.heads * dims.v_head_dim * h
    if moe:
        mlp = h * dims.experts + dims.mlp_matrices * h * (dims.experts_per_token * dims.expert_ffn + dims.shared_ffn)
    else:
        mlp = dims.mlp_matrices * h * dims.ffn
    return 2.0 * (attn + mlp)


def forward_flops_per_token(dims: ModelDims, seq_len: ArrayLike) -> ArrayLike:
    """Forward FLOPs per token of the whole model: layers + logits ``2·h·V``."""
    layers = (dims.dense_layers * layer_gemm_flops_per_token(dims, False)
              + dims.moe_layers * layer_gemm_flops_per_token(dims, True))
    return layers + dims.layers * attention_core_flops_per_token(dims, seq_len) + 2.0 * dims.hidden * dims.vocab


def model_flops_per_step(dims: ModelDims, global_batch: ArrayLike, seq_len: ArrayLike) -> ArrayLike:
    """``F_model = 3 · B·s · forward FLOPs per token`` (see module docstring)."""
    tokens = np.multiply(global_batch, seq_len)
    return 3.0 * tokens * forward_flops_per_token(dims, seq_len)


def recompute_flops_per_token(dims: ModelDims, seq_len: ArrayLike, recompute: ArrayLike,
                              flash_attention: ArrayLike = 0) -> ArrayLike:
    """Recomputed forward FLOPs per token: selective (code 1) 3 × the attention core's forward FLOPs
    (Korthikanti App. A convention; nothing with flash attention, whose backward recomputes inside the
    kernel and is counted in neither), full (code 2) every layer's forward, op-level selective (code 3) the
    projections it recomputes (2 FLOPs per weight of
    :attr:`~distcalc.model.dims.ModelDims.op_sac_dense` / ``op_sac_moe``, counted once per model by
    :func:`distcalc.op_checkpoint.op_sac_layer`) and the attention core without flash."""
    core = dims.layers * attention_core_flops_per_token(dims, seq_len)
    layers_fwd = (dims.dense_layers * layer_gemm_flops_per_token(dims, False)
                  + dims.moe_layers * layer_gemm_flops_per_token(dims, True)) + core
    r = np.asarray(recompute)
    no_flash = np.where(np.asarray(flash_attention) != 0, 0.0, 1.0)
    op_sac = (dims.dense_layers * (2.0 * dims.op_sac_dense.recomputed_weights)
              + dims.moe_layers * (2.0 * dims.op_sac_moe.recomputed_weights)) + core * no_flash
    return np.where(r == Recompute.FULL.code, layers_fwd,
                    np.where(r == Recompute.SELECTIVE.code, 3.0 * core * no_flash,
                             np.where(r == Recompute.SELECTIVE_OP.code, op_sac, 0.0)))


def hardware_flops_per_step(dims: ModelDims, global_batch: ArrayLike, seq_len: ArrayLike,
                            recompute: ArrayLike, flash_attention: ArrayLike = 0) -> ArrayLike:
    """``F_model`` plus the recomputed work, ``B·s·``:func:`recompute_flops_per_token`."""
    tokens = np.multiply(global_batch, seq_len)
    extra = recompute_flops_per_token(dims, seq_len, recompute, flash_attention)
    return model_flops_per_step(dims, global_batch, seq_len) + tokens * extra
