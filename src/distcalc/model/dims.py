"""One plain-number view of a :class:`~distcalc.model.ModelSpec` for the compute, step-time and memory formulas.

:class:`ModelDims` holds the sizes the formulas need (elements and parameter counts, not bytes), one name per
quantity: the widths (``hidden``, ``heads``, ``head_dim``, …, ``experts_per_token``), the per-layer parameter
split (TP-sharded, TP-replicated, routed experts) of dense and MoE layers, the embedding / output-layer
parameters, and the cumulative count of MoE layers so that the number of MoE layers in any contiguous range of
layers is one subtraction (this keeps per-stage counts vectorisable over NumPy arrays of pipeline
configurations).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from distcalc.model.params import (
    embedding_parameters,
    layer_parameters,
    lm_head_parameters,
    norm_parameters,
    position_embedding_parameters,
)
from distcalc.model.spec import ModelSpec
from distcalc.op_checkpoint import OpSacSplit, op_sac_layer


@dataclass(frozen=True, eq=False)
class ModelDims:
    """Sizes of one model as plain numbers (see the module docstring)."""

    name: str
    layers: int  #: L
    hidden: int  #: h
    heads: int  #: a (query heads)
    kv_heads: int  #: g, heads whose K/V are materialised (MLA: all heads)
    head_dim: int  #: d, query/key width per head
    v_head_dim: int  #: value width per head
    qkv_width: int  #: output width of the fused QKV projection (a·d + 2·g·d; MLA: its equivalent)
    ffn: int  #: f, dense MLP width
    expert_ffn: int  #: routed expert MLP width (0 for a dense model)
    shared_ffn: int  #: total shared-expert width per MoE layer (0 for a dense model)
    experts: int  #: routed experts per MoE layer (0 = dense)
    experts_per_token: int  #: routed experts each token visits (top-k)
    moe_layers: int
    gated: bool  #: gated MLP (gate + up + down)
    vocab: int  #: V
    attention_dropout: bool
    hidden_dropout: bool
    embedding_dropout: bool
    rope: bool
    rmsnorm: bool  #: RMSNorm (else LayerNorm): what an eager framework runs as composite ops
    q_lora_rank: int  #: MLA query latent width (0: full query projection)
    kv_lora_rank: int  #: MLA key/value latent width (0: not MLA)
    qk_rope_dim: int  #: MLA rotary part of d_qk (the key's rotary part is shared by all heads)
    parameters: int
    parameters_per_layer: float  #: mean non-embedding parameters of one layer (all experts)
    expert_parameters_per_layer: float  #: mean routed-expert parameters of one layer (sharded by EP too)
    # parameters per layer (whole model, before TP/EP sharding)
    dense_sharded: float
    dense_replicated: float
    moe_sharded: float
    moe_replicated: float
    moe_experts: float
    embedding: float  #: the input embedding table, V·h
    position_embedding: float  #: a learned position table (0 with RoPE/ALiBi)
    lm_head: float  #: the output layer's own weights (0 when tied to the embedding)
    final_norm: float
    tied_embeddings: bool  #: output layer shares the input embedding (gradient sync when pp > 1)
    moe_cumulative: np.ndarray  #: moe_cumulative[k] = MoE layers among layers 0..k-1 (length L+1)
    sliding_window: int = 0  #: attention window w (0: full causal attention; distcalc.model.blocks)
    parallel_block: bool = False  #: parallel attention + MLP block (one TP sync per pass; distcalc.model.blocks)
    block_norms: int = 2  #: normalisation layers per transformer layer
    qkv_bias: bool = False  #: bias on the fused QKV projection
    out_bias: bool = False  #: bias on the attention output projection
    mlp_bias: bool = False  #: biases on the MLP projections
    alibi: bool = False  #: ALiBi: a per-head linear bias added to the attention scores (Press et al. 2022)
    #: projections op-level selective checkpointing saves / recomputes in one dense and one MoE layer (an MoE
    #: layer's experts are not among them; :mod:`distcalc.op_checkpoint`), fixed by the widths: built once here
    op_sac_dense: OpSacSplit = OpSacSplit()
    op_sac_moe: OpSacSplit = OpSacSplit()

    @property
    def dense_layers(self) -> int:
        """Layers with a dense MLP."""
        return self.layers - self.moe_layers

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP: 3 gated, 2 otherwise."""
        return 3 if self.gated else 2

    @property
    def embedding_parameters(self) -> float:
        """The first stage's tables: V·h plus the learned positions."""
        return self.embedding + self.position_embedding

    @property
    def lm_head_parameters(self) -> float:
        """The output layer's V·h on the last stage (tied embeddings also keep a copy there)."""
        return self.lm_head or float(self.vocab * self.hidden)

    @property
    def mla_latent(self) -> float:
        """MLA: query + key/value latent widths r_q + r_kv (0 without MLA)."""
        return float(self.q_lora_rank + self.kv_lora_rank)

    @property
    def uniform(self) -> bool:
        """All layers have the same parameters and activations (all dense, or all MoE)."""
        return self.moe_layers in (0, self.layers)

    def moe_layers_between(self, start, stop):
        """MoE layers among layers [start, stop) (works elementwise on integer arrays)."""
        cumulative = self.moe_cumulative
        return cumulative[np.asarray(stop, dtype=np.int64)] - cumulative[np.asarray(start, dtype=np.int64)]


@lru_cache(maxsize=256)
def model_dims(spec: ModelSpec) -> ModelDims:
    """The :class:`ModelDims` of ``spec`` (cached; specs are frozen)."""
    L, h = spec.num_hidden_layers, spec.hidden_size
    layers = [layer_parameters(spec, i) for i in range(L)]
    moe_flags = np.array([spec.layer_is_moe(i) for i in range(L)], dtype=np.int64)
    dense = next((p for p, moe in zip(layers, moe_flags) if not moe), None)
    moe = next((p for p, moe in zip(layers, moe_flags) if moe), None)
    qkv_width = (spec.num_attention_heads + 2 * spec.kv_heads) * spec.head_size if not spec.is_mla \
        else max(1, round(layers[0].attention_qkv / h))
    pos = getattr(spec.position_embedding, "value", spec.position_embedding)
    return ModelDims(
        name=spec.name, layers=L, hidden=h, heads=spec.num_attention_heads, kv_heads=spec.kv_heads_effective,
        head_dim=spec.qk_head_size, v_head_dim=spec.v_head_size, qkv_width=qkv_width, ffn=spec.intermediate_size,
        expert_ffn=spec.expert_intermediate_size if spec.is_moe else 0,
        shared_ffn=spec.shared_intermediate_size if spec.is_moe else 0,
        experts=spec.num_local_experts, experts_per_token=spec.num_experts_per_tok, moe_layers=int(moe_flags.sum()),
        gated=spec.is_gated, vocab=spec.vocab_size, attention_dropout=spec.attention_dropout > 0,
        hidden_dropout=spec.hidden_dropout > 0, embedding_dropout=spec.embedding_dropout > 0, rope=pos == "rope",
        rmsnorm=getattr(spec.norm_type, "value", spec.norm_type) == "rmsnorm", parameters=spec.parameters,
        q_lora_rank=int(spec.q_lora_rank or 0) if spec.is_mla else 0,
        kv_lora_rank=int(spec.kv_lora_rank or 0) if spec.is_mla else 0,
        qk_rope_dim=int(spec.qk_rope_head_dim or 0) if spec.is_mla else 0,
        parameters_per_layer=sum(p.total for p in layers) / L,
        expert_parameters_per_layer=sum(p.mlp_experts for p in layers) / L,
        dense_sharded=float(dense.non_expert - dense.replicated) if dense else 0.0,
        dense_replicated=float(dense.replicated) if dense else 0.0,
        moe_sharded=float(moe.non_expert - moe.replicated) if moe else 0.0,
        moe_replicated=float(moe.replicated) if moe else 0.0,
        moe_experts=float(moe.mlp_experts) if moe else 0.0,
        embedding=float(embedding_parameters(spec)), position_embedding=float(position_embedding_parameters(spec)),
        lm_head=float(lm_head_parameters(spec)), final_norm=float(norm_parameters(spec)),
        tied_embeddings=spec.tie_word_embeddings, moe_cumulative=np.concatenate([[0], np.cumsum(moe_flags)]),
        sliding_window=int(spec.sliding_window or 0), parallel_block=spec.parallel_attn,
        block_norms=spec.norms_per_layer, qkv_bias=bool(spec.attention_qkv_bias),
        out_bias=bool(spec.attention_out_bias), mlp_bias=bool(spec.mlp_bias), alibi=pos == "alibi",
        op_sac_dense=_op_sac(spec, with_mlp=True), op_sac_moe=_op_sac(spec, with_mlp=False),
    )


def _op_sac(spec: ModelSpec, with_mlp: bool) -> OpSacSplit:
    """The op-level selective checkpoint split of one layer (``with_mlp`` False: an MoE layer)."""
    return op_sac_layer(spec.hidden_size, spec.num_attention_heads, spec.kv_heads_effective, spec.qk_head_size,
                        spec.v_head_size, spec.intermediate_size, spec.is_gated, with_mlp=with_mlp)


__all__ = ["ModelDims", "model_dims"]
