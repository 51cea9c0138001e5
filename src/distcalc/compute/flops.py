"""Model dimensions as plain numbers and the FLOP counts behind MFU and HFU.

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

from dataclasses import dataclass
from typing import Any

import numpy as np

from distcalc.op_checkpoint import block_projections, op_sac_split

ArrayLike = Any


@dataclass(frozen=True)
class ModelDims:
    """The numbers of a :class:`distcalc.model.ModelSpec` that the compute model needs (elements, not bytes)."""

    name: str
    hidden: int  #: h
    layers: int  #: L
    heads: int  #: a (query heads)
    kv_heads: int  #: g
    head_dim: int  #: d (query/key width per head)
    v_head_dim: int  #: value width per head
    qkv_width: int  #: output width of the fused QKV projection (a·d + 2·g·d; MLA: its equivalent)
    ffn: int  #: f, dense MLP width
    gated: bool  #: gated MLP (gate + up + down)
    vocab: int  #: V
    experts: int  #: routed experts per MoE layer (0 = dense)
    top_k: int
    expert_ffn: int
    shared_ffn: int  #: total shared-expert width per MoE layer
    moe_layers: int
    attention_dropout: bool
    hidden_dropout: bool
    rope: bool
    parameters: int
    parameters_per_layer: float  #: mean non-embedding parameters of one layer (all experts)
    expert_parameters_per_layer: float  #: mean routed-expert parameters of one layer (sharded by EP too)
    embedding_parameters: int  #: V·h (+ positions) — the first stage's table
    lm_head_parameters: int  #: V·h on the last stage (tied embeddings also keep a copy there)
    tied_embeddings: bool = False  #: output layer shares the input embedding (gradient sync when pp > 1)
    rmsnorm: bool = True  #: RMSNorm (else LayerNorm): what an eager framework runs as composite ops
    q_lora_rank: int = 0  #: MLA query latent width (0: full query projection)
    kv_lora_rank: int = 0  #: MLA key/value latent width (0: not MLA)
    qk_rope_dim: int = 0  #: MLA rotary part of d_qk (the key's rotary part is shared by all heads)

    @property
    def dense_layers(self) -> int:
        """Layers with a dense MLP."""
        return self.layers - self.moe_layers

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP: 3 gated, 2 otherwise."""
        return 3 if self.gated else 2


def model_dims(spec: Any) -> ModelDims:
    """Extract :class:`ModelDims` from a :class:`distcalc.model.ModelSpec`."""
    from distcalc.model import layer_parameters, parameter_breakdown

    h = spec.hidden_size
    breakdown = parameter_breakdown(spec)
    layer0 = layer_parameters(spec, 0)
    qkv_width = (spec.num_attention_heads + 2 * spec.kv_heads) * spec.head_size if not spec.is_mla \
        else max(1, round(layer0.attention_qkv / h))
    embedding = breakdown.get("embedding", spec.vocab_size * h) + breakdown.get("position_embedding", 0)
    lm_head = breakdown.get("lm_head", 0) or spec.vocab_size * h
    layers = [layer_parameters(spec, i) for i in range(spec.num_hidden_layers)]
    layer_total = sum(p.total for p in layers)
    expert_total = sum(p.mlp_experts for p in layers)
    pos = getattr(spec.position_embedding, "value", spec.position_embedding)
    return ModelDims(
        name=spec.name, hidden=h, layers=spec.num_hidden_layers, heads=spec.num_attention_heads,
        kv_heads=spec.kv_heads_effective, head_dim=spec.qk_head_size, v_head_dim=spec.v_head_size,
        qkv_width=qkv_width, ffn=spec.intermediate_size, gated=spec.is_gated, vocab=spec.vocab_size,
        experts=spec.num_local_experts, top_k=spec.num_experts_per_tok, expert_ffn=spec.expert_intermediate_size,
        shared_ffn=spec.shared_intermediate_size if spec.is_moe else 0, moe_layers=spec.moe_layers,
        attention_dropout=spec.attention_dropout > 0, hidden_dropout=spec.hidden_dropout > 0,
        rope=pos == "rope", parameters=spec.parameters,
        parameters_per_layer=layer_total / spec.num_hidden_layers,
        expert_parameters_per_layer=expert_total / spec.num_hidden_layers,
        embedding_parameters=embedding, lm_head_parameters=lm_head, tied_embeddings=spec.tie_word_embeddings,
        rmsnorm=getattr(spec.norm_type, "value", spec.norm_type) == "rmsnorm",
        q_lora_rank=int(spec.q_lora_rank or 0) if spec.is_mla else 0,
        kv_lora_rank=int(spec.kv_lora_rank or 0) if spec.is_mla else 0,
        qk_rope_dim=int(spec.qk_rope_head_dim or 0) if spec.is_mla else 0,
    )


def attention_core_flops_per_token(dims: ModelDims, seq_len: ArrayLike) -> ArrayLike:
    """Forward FLOPs of QKᵀ and P·V per token, full s×s (Korthikanti convention): ``2·s·a·(d_qk + d_v)``."""
    return 2.0 * np.multiply(seq_len, dims.heads * (dims.head_dim + dims.v_head_dim))


def layer_gemm_flops_per_token(dims: ModelDims, moe: bool) -> float:
    """Forward FLOPs per token of one layer's weight GEMMs: 2 × weights touched by a token."""
    h = dims.hidden
    attn = h * dims.qkv_width + dims.heads * dims.v_head_dim * h
    if moe:
        mlp = h * dims.experts + dims.mlp_matrices * h * (dims.top_k * dims.expert_ffn + dims.shared_ffn)
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
    projections it recomputes (:mod:`distcalc.op_checkpoint`) and the attention core without flash."""
    core = dims.layers * attention_core_flops_per_token(dims, seq_len)
    layers_fwd = (dims.dense_layers * layer_gemm_flops_per_token(dims, False)
                  + dims.moe_layers * layer_gemm_flops_per_token(dims, True)) + core
    r = np.asarray(recompute)
    no_flash = np.where(np.asarray(flash_attention) != 0, 0.0, 1.0)
    op_sac = (dims.dense_layers * _op_sac_flops_per_token(dims, False)
              + dims.moe_layers * _op_sac_flops_per_token(dims, True)) + core * no_flash
    return np.where(r == 2, layers_fwd, np.where(r == 1, 3.0 * core * no_flash, np.where(r == 3, op_sac, 0.0)))


def _op_sac_flops_per_token(dims: ModelDims, moe: bool) -> float:
    """Forward FLOPs per token of the projections op-level selective checkpointing recomputes in one layer."""
    projections = block_projections(dims.hidden, dims.heads, dims.kv_heads, dims.head_dim, dims.v_head_dim,
                                    dims.ffn, dims.gated, with_mlp=not moe)
    return 2.0 * sum(p.out_width * p.in_width for p in op_sac_split(projections)[1])


def hardware_flops_per_step(dims: ModelDims, global_batch: ArrayLike, seq_len: ArrayLike,
                            recompute: ArrayLike, flash_attention: ArrayLike = 0) -> ArrayLike:
    """``F_model`` plus the recomputed work, ``B·s·``:func:`recompute_flops_per_token`."""
    tokens = np.multiply(global_batch, seq_len)
    extra = recompute_flops_per_token(dims, seq_len, recompute, flash_attention)
    return model_flops_per_step(dims, global_batch, seq_len) + tokens * extra
