"""Parameter counts of a :class:`~distcalc.model.architecture.ModelArchitecture`, by component.

Symbols: h hidden size, L layers, a query heads, g key/value heads, d head width, f MLP width,
V vocabulary, E routed experts, k experts per token, f_e expert width, f_s shared-expert width.

Per layer (weights, plus biases where the family has them):

* ``attention/qkv``: ``h·(a·d + 2·g·d)`` (+ ``a·d + 2·g·d`` bias). MLA (DeepSeek-V2/V3, HF
  ``modeling_deepseek``): ``h·r_q + r_q·a·(d_nope + d_rope)`` (q_a_proj, q_b_proj) +
  ``h·(r_kv + d_rope) + r_kv·a·(d_nope + d_v)`` (kv_a_proj_with_mqa, kv_b_proj).
* ``attention/out``: ``a·d_v·h`` (+ h bias).
* ``mlp`` (dense layers): ``m·h·f`` with m = 3 for a gated MLP (gate, up, down), 2 otherwise (+ biases).
* MoE layers: ``mlp/experts`` = ``E·m·h·f_e``, ``mlp/router`` = ``h·E``, ``mlp/shared`` = ``m·h·f_s``.
* ``norm``: 2 per layer (1 in a parallel block with a shared norm: GPT-J, PaLM, Falcon-7B), +1 final, each
  2h (LayerNorm weight+bias) or h (RMSNorm); MLA adds its q/kv compression norms (r_q + r_kv).

Model: ``embedding`` = V·h, ``position_embedding`` = max_positions·h when learned, ``lm_head`` = V·h unless
tied. For GPT-3 175B this gives 12·L·h²·(1 + 13/(12h)) + (V + s)·h ≈ 174.6e9 (Brown et al. 2020 Table 2.1;
Narayanan et al. 2021 Eq. 2). DeepSeek-V3's multi-token-prediction module (14B) and its router
score-correction bias (E per layer) are not counted: the published 671B excludes the former.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from distcalc.model.architecture import ModelArchitecture, NormType, PositionEmbedding


@dataclass(frozen=True)
class LayerParameters:
    """Parameters of one transformer layer by component; ``replicated`` is the part every tensor-parallel
    rank keeps whole (norms, row-parallel biases, the router), the rest is split across TP ranks.
    ``mlp_experts`` is additionally split across expert-parallel ranks."""

    attention_qkv: int
    attention_out: int
    mlp: int
    mlp_experts: int
    mlp_router: int
    mlp_shared: int
    norm: int
    replicated: int

    @property
    def total(self) -> int:
        """All parameters of the layer."""
        return (self.attention_qkv + self.attention_out + self.mlp + self.mlp_experts + self.mlp_router
                + self.mlp_shared + self.norm)

    @property
    def non_expert(self) -> int:
        """Parameters outside the routed experts (sharded by TP, replicated over EP)."""
        return self.total - self.mlp_experts


def norm_parameters(spec: ModelArchitecture) -> int:
    """Parameters of one normalisation layer over h: 2h (LayerNorm weight + bias) or h (RMSNorm)."""
    return 2 * spec.hidden_size if spec.norm_type == NormType.LAYERNORM else spec.hidden_size


def mlp_parameters(spec: ModelArchitecture, width: int) -> tuple[int, int]:
    """(weights+biases, replicated biases) of one MLP of inner width ``width``: m·h·f (+ biases)."""
    h = spec.hidden_size
    matrices = 3 if spec.is_gated else 2
    total = matrices * h * width
    replicated = 0
    if spec.mlp_bias and width:
        total += (matrices - 1) * width + h  # column-parallel biases (split) + row-parallel bias (whole)
        replicated = h
    return total, replicated


def attention_parameters(spec: ModelArchitecture) -> tuple[int, int, int, int]:
    """(qkv, out, extra norm params, replicated) of one attention block (MHA/GQA or MLA)."""
    h, a = spec.hidden_size, spec.num_attention_heads
    extra_norm = 0
    if spec.is_mla:
        nope, rope, v = int(spec.qk_nope_head_dim or 0), int(spec.qk_rope_head_dim or 0), int(spec.v_head_dim or 0)
        kv_rank = int(spec.kv_lora_rank or 0)
        if spec.q_lora_rank:
            q = h * spec.q_lora_rank + spec.q_lora_rank * a * (nope + rope)
            extra_norm += spec.q_lora_rank
        else:
            q = h * a * (nope + rope)
        kv = h * (kv_rank + rope) + kv_rank * a * (nope + v)
        extra_norm += kv_rank
        qkv, out_in = q + kv, a * v
    else:
        d, g = spec.head_size, spec.kv_heads
        qkv = h * (a * d + 2 * g * d)
        if spec.attention_qkv_bias:
            qkv += a * d + 2 * g * d
        out_in = a * d
    out = out_in * h + (h if spec.attention_out_bias else 0)
    replicated = (h if spec.attention_out_bias else 0)
    return qkv, out, extra_norm, replicated


def layer_parameters(spec: ModelArchitecture, layer: int) -> LayerParameters:
    """Parameters of layer ``layer`` (0-based); MoE or dense per :meth:`ModelArchitecture.layer_is_moe`."""
    qkv, out, extra_norm, replicated = attention_parameters(spec)
    norm = spec.norms_per_layer * norm_parameters(spec) + extra_norm
    replicated += norm
    if spec.layer_is_moe(layer):
        one_expert, _ = mlp_parameters(spec, spec.expert_intermediate_size)
        experts = spec.num_local_experts * one_expert
        router = spec.hidden_size * spec.num_local_experts
        shared, shared_rep = mlp_parameters(spec, spec.shared_intermediate_size)
        return LayerParameters(qkv, out, 0, experts, router, shared, norm, replicated + router + shared_rep)
    mlp, mlp_rep = mlp_parameters(spec, spec.intermediate_size)
    return LayerParameters(qkv, out, mlp, 0, 0, 0, norm, replicated + mlp_rep)


def embedding_parameters(spec: ModelArchitecture) -> int:
    """Input token embedding V·h."""
    return spec.vocab_size * spec.hidden_size


def position_embedding_parameters(spec: ModelArchitecture) -> int:
    """Learned position table max_positions·h (0 for RoPE/ALiBi)."""
    if spec.position_embedding == PositionEmbedding.LEARNED:
        return spec.max_position_embeddings * spec.hidden_size
    return 0


def lm_head_parameters(spec: ModelArchitecture) -> int:
    """Output projection V·h, or 0 when tied to the input embedding."""
    return 0 if spec.tie_word_embeddings else spec.vocab_size * spec.hidden_size


def parameter_breakdown(spec: ModelArchitecture) -> dict[str, int]:
    """:func:`_parameter_breakdown` of ``spec`` (a fresh dict; the count is cached per spec: specs are frozen
    and one ``analyze`` call asks for it several times, each a walk over every layer)."""
    return dict(_parameter_breakdown(spec))


@functools.lru_cache(maxsize=256)
def _parameter_breakdown(spec: ModelArchitecture) -> dict[str, int]:
    """Parameters keyed ``attention/qkv``, ``attention/out``, ``mlp`` (dense layers), ``mlp/experts``,
    ``mlp/router``, ``mlp/shared`` (MoE models only), ``embedding``, ``position_embedding`` (learned only),
    ``norm`` (all norms incl. final), ``lm_head``; the values sum to :attr:`distcalc.model.spec.ModelSpec.parameters`."""
    totals = dict.fromkeys(("attention/qkv", "attention/out", "mlp", "mlp/experts", "mlp/router", "mlp/shared",
                            "norm"), 0)
    for layer in range(spec.num_hidden_layers):
        p = layer_parameters(spec, layer)
        totals["attention/qkv"] += p.attention_qkv
        totals["attention/out"] += p.attention_out
        totals["mlp"] += p.mlp
        totals["mlp/experts"] += p.mlp_experts
        totals["mlp/router"] += p.mlp_router
        totals["mlp/shared"] += p.mlp_shared
        totals["norm"] += p.norm
    totals["norm"] += norm_parameters(spec)  # final norm
    breakdown = {"attention/qkv": totals["attention/qkv"], "attention/out": totals["attention/out"],
                 "mlp": totals["mlp"]}
    if spec.is_moe:
        breakdown.update({k: totals[k] for k in ("mlp/experts", "mlp/router", "mlp/shared")})
    breakdown["embedding"] = embedding_parameters(spec)
    if spec.position_embedding == PositionEmbedding.LEARNED:
        breakdown["position_embedding"] = position_embedding_parameters(spec)
    breakdown["norm"] = totals["norm"]
    breakdown["lm_head"] = lm_head_parameters(spec)
    return breakdown


def active_parameter_count(spec: ModelArchitecture) -> int:
    """Parameters used by one token: all but the routed experts it skips (k of E experts active).

    Embedding included (as in DeepSeek-V3's "37B activated" and Mixtral's "13B active")."""
    total = sum(parameter_breakdown(spec).values())
    if not spec.is_moe:
        return total
    one_expert, _ = mlp_parameters(spec, spec.expert_intermediate_size)
    skipped = (spec.num_local_experts - spec.num_experts_per_tok) * one_expert * spec.moe_layers
    return total - skipped
