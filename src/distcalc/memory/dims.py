"""Plain-number view of a :class:`ModelSpec` for the vectorised memory formulas.

:class:`ModelDims` holds the sizes the formulas need (as floats) and the per-layer parameter split
(TP-sharded, TP-replicated, routed experts) for dense and MoE layers, plus the cumulative count of MoE
layers so that the number of MoE layers in any contiguous range of layers is one subtraction (this keeps
per-stage counts vectorisable over NumPy arrays of pipeline configurations).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from distcalc.model import ModelSpec
from distcalc.model.params import (
    embedding_parameters,
    layer_parameters,
    lm_head_parameters,
    norm_parameters,
    position_embedding_parameters,
)


@dataclass(frozen=True, eq=False)
class ModelDims:
    """Sizes of one model as plain numbers (see module docstring)."""

    layers: int
    hidden: float
    heads: float
    kv_heads: float  # heads whose K/V are materialised (MLA: all heads)
    qk_head: float
    v_head: float
    ffn: float
    expert_ffn: float
    shared_ffn: float
    experts: float
    experts_per_token: float
    gated: bool
    vocab: float
    attention_dropout: bool
    hidden_dropout: bool
    embedding_dropout: bool
    # parameters per layer (whole model, before TP/EP sharding)
    dense_sharded: float
    dense_replicated: float
    moe_sharded: float
    moe_replicated: float
    moe_experts: float
    embedding: float
    position_embedding: float
    lm_head: float  # 0 when tied
    final_norm: float
    tied: bool
    moe_cumulative: np.ndarray  # moe_cumulative[k] = MoE layers among layers 0..k-1 (length L+1)
    mla_latent: float = 0.0  # MLA: query + key/value latent widths r_q + r_kv (0 without MLA)

    @property
    def uniform(self) -> bool:
        """All layers have the same parameters and activations (all dense, or all MoE)."""
        n_moe = int(self.moe_cumulative[-1])
        return n_moe in (0, self.layers)

    def moe_layers_between(self, start, stop):
        """MoE layers among layers [start, stop) (works elementwise on integer arrays)."""
        cumulative = self.moe_cumulative
        return cumulative[np.asarray(stop, dtype=np.int64)] - cumulative[np.asarray(start, dtype=np.int64)]


@lru_cache(maxsize=256)
def model_dims(spec: ModelSpec) -> ModelDims:
    """The :class:`ModelDims` of ``spec`` (cached; specs are frozen)."""
    L = spec.num_hidden_layers
    moe_flags = np.array([spec.layer_is_moe(i) for i in range(L)], dtype=np.int64)
    dense_index = next((i for i in range(L) if not moe_flags[i]), None)
    moe_index = next((i for i in range(L) if moe_flags[i]), None)
    dense = layer_parameters(spec, dense_index) if dense_index is not None else None
    moe = layer_parameters(spec, moe_index) if moe_index is not None else None
    return ModelDims(
        layers=L,
        hidden=float(spec.hidden_size),
        heads=float(spec.num_attention_heads),
        kv_heads=float(spec.kv_heads_effective),
        qk_head=float(spec.qk_head_size),
        v_head=float(spec.v_head_size),
        ffn=float(spec.intermediate_size),
        expert_ffn=float(spec.expert_intermediate_size if spec.is_moe else 0),
        shared_ffn=float(spec.shared_intermediate_size if spec.is_moe else 0),
        experts=float(spec.num_local_experts),
        experts_per_token=float(spec.num_experts_per_tok),
        gated=spec.is_gated,
        vocab=float(spec.vocab_size),
        attention_dropout=spec.attention_dropout > 0,
        hidden_dropout=spec.hidden_dropout > 0,
        embedding_dropout=spec.embedding_dropout > 0,
        dense_sharded=float(dense.non_expert - dense.replicated) if dense else 0.0,
        dense_replicated=float(dense.replicated) if dense else 0.0,
        moe_sharded=float(moe.non_expert - moe.replicated) if moe else 0.0,
        moe_replicated=float(moe.replicated) if moe else 0.0,
        moe_experts=float(moe.mlp_experts) if moe else 0.0,
        embedding=float(embedding_parameters(spec)),
        position_embedding=float(position_embedding_parameters(spec)),
        lm_head=float(lm_head_parameters(spec)),
        final_norm=float(norm_parameters(spec)),
        tied=spec.tie_word_embeddings,
        moe_cumulative=np.concatenate([[0], np.cumsum(moe_flags)]),
        mla_latent=float((spec.q_lora_rank or 0) + (spec.kv_lora_rank or 0)) if spec.is_mla else 0.0,
    )
