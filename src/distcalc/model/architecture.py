"""The model architecture: a decoder-only transformer described with Hugging Face field names, its
cross-field checks and the sizes derived from its fields (parameter counts: :mod:`distcalc.model.params`;
the two together: :class:`distcalc.model.spec.ModelSpec`).

Field names follow ``transformers`` ``config.json`` (``hidden_size``, ``num_hidden_layers``,
``num_attention_heads``, ``num_key_value_heads``, ``intermediate_size``, ``vocab_size``,
``tie_word_embeddings``, ``num_local_experts`` / ``n_routed_experts``, ``num_experts_per_tok``,
``moe_intermediate_size``, ``n_shared_experts``, ``moe_layer_freq``, ``first_k_dense_replace``, and the
DeepSeek MLA fields ``q_lora_rank``, ``kv_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``,
``v_head_dim``). Fields that ``config.json`` leaves implicit per family (norm type, biases, learned
position embeddings, gated MLP) are explicit here; :mod:`distcalc.model.hf` fills them per family.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from distcalc.errors import ConfigError

# Activations whose MLP is gated (two input projections, e.g. SwiGLU = silu(x W_gate) * (x W_up)) when the
# family does not say otherwise. Llama/Mistral/Mixtral/Qwen2/DeepSeek use "silu" with a gated MLP.
GATED_ACTIVATIONS = frozenset({"silu", "swish", "swiglu", "geglu", "reglu"})


class NormType(str, Enum):
    """Normalisation layer: LayerNorm has a weight and a bias (2h parameters), RMSNorm a weight (h)."""

    LAYERNORM = "layernorm"
    RMSNORM = "rmsnorm"


class PositionEmbedding(str, Enum):
    """Position encoding: ``learned`` adds a ``max_position_embeddings × hidden_size`` table (GPT-2/GPT-3)."""

    ROPE = "rope"
    LEARNED = "learned"
    ALIBI = "alibi"
    NONE = "none"


class ModelArchitecture(BaseModel):
    """A decoder-only transformer (dense or mixture-of-experts) with Hugging Face field names.

    Sizes are element counts (not bytes). Derived defaults: ``num_key_value_heads`` = heads (MHA),
    ``head_dim`` = hidden / heads, ``moe_intermediate_size`` = ``intermediate_size``,
    ``shared_expert_intermediate_size`` = ``n_shared_experts × moe_intermediate_size``,
    ``gated_mlp`` = activation in :data:`GATED_ACTIVATIONS`.
    """

    # defer_build: only its subclass ModelSpec is validated (and builds its own validator with the class)
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True, defer_build=True)

    name: str = Field(description="model name (preset name or file stem)")
    model_type: str = Field("llama", description="Hugging Face model_type / family")
    hidden_size: int = Field(gt=0, description="h, model width")
    num_hidden_layers: int = Field(gt=0, description="L, transformer layers")
    num_attention_heads: int = Field(gt=0, description="a, query heads")
    num_key_value_heads: int | None = Field(None, gt=0, description="key/value heads (GQA); default = a")
    head_dim: int | None = Field(None, gt=0, description="per-head width; default hidden/heads")
    intermediate_size: int = Field(gt=0, description="f, dense MLP width")
    vocab_size: int = Field(gt=0, description="V, vocabulary size")
    max_position_embeddings: int = Field(2048, gt=0, description="longest position (learned table rows)")
    tie_word_embeddings: bool = Field(False, description="LM head shares the input embedding matrix")
    hidden_act: str = Field("silu", description="MLP activation")
    gated_mlp: bool | None = Field(None, description="gated MLP (3 matrices: gate, up, down); default by act")
    norm_type: NormType = Field(NormType.RMSNORM, description="layernorm (weight+bias) or rmsnorm (weight)")
    attention_qkv_bias: bool = Field(False, description="bias on the Q/K/V projections")
    attention_out_bias: bool = Field(False, description="bias on the attention output projection")
    mlp_bias: bool = Field(False, description="biases on the MLP projections")
    position_embedding: PositionEmbedding = Field(PositionEmbedding.ROPE, description="position encoding")
    attention_dropout: float = Field(0.0, ge=0, lt=1, description="dropout on attention probabilities")
    hidden_dropout: float = Field(0.0, ge=0, lt=1, description="dropout after attention and MLP blocks")
    embedding_dropout: float = Field(0.0, ge=0, lt=1, description="dropout on the embedding output")
    # Mixture of experts (0 experts = dense)
    num_local_experts: int = Field(
        0, ge=0, validation_alias=AliasChoices("num_local_experts", "n_routed_experts", "num_experts"),
        description="routed experts per MoE layer (0 = dense model)",
    )
    num_experts_per_tok: int = Field(0, ge=0, description="k, routed experts each token visits")
    moe_intermediate_size: int | None = Field(None, gt=0, description="width of one routed expert")
    n_shared_experts: int = Field(0, ge=0, description="always-active shared experts per MoE layer")
    shared_expert_intermediate_size: int | None = Field(None, ge=0, description="total shared-expert width")
    moe_layer_freq: int = Field(1, gt=0, description="every moe_layer_freq-th layer is MoE")
    first_k_dense_replace: int = Field(0, ge=0, description="the first k layers keep a dense MLP")
    # Multi-head latent attention (DeepSeek-V2/V3)
    q_lora_rank: int | None = Field(None, gt=0, description="MLA query compression rank (None = full q_proj)")
    kv_lora_rank: int | None = Field(None, gt=0, description="MLA key/value compression rank (enables MLA)")
    qk_nope_head_dim: int | None = Field(None, gt=0, description="MLA per-head non-rotary q/k width")
    qk_rope_head_dim: int | None = Field(None, gt=0, description="MLA per-head rotary q/k width")
    v_head_dim: int | None = Field(None, gt=0, description="MLA per-head value width")
    # Block layout (distcalc.model.blocks)
    parallel_attn: bool = Field(
        False, validation_alias=AliasChoices("parallel_attn", "use_parallel_residual"),
        description="parallel block: y = x + attn(norm(x)) + mlp(norm(x)) (GPT-J, PaLM, Falcon, GPT-NeoX)",
    )
    block_norms: int | None = Field(None, ge=1, le=2, description="norms per layer; default 1 parallel, 2 sequential")
    sliding_window: int | None = Field(None, gt=0, description="each query attends to the last w keys (Mistral)")
    source: str = Field("", description="where the numbers come from")

    def __init__(self, **data: Any) -> None:
        # Cross-field checks run after pydantic so that they raise ConfigError itself (pydantic wraps a
        # ValueError raised inside a validator into a ValidationError).
        super().__init__(**data)
        self._check()

    def _check(self) -> None:
        a, kv = self.num_attention_heads, self.kv_heads
        if a % kv:
            raise ConfigError(
                f"model {self.name!r}: num_attention_heads({a}) is not divisible by num_key_value_heads({kv})"
            )
        if self.head_dim is None and self.hidden_size % a and not self.is_mla:
            raise ConfigError(
                f"model {self.name!r}: hidden_size({self.hidden_size}) is not divisible by "
                f"num_attention_heads({a}); give head_dim explicitly"
            )
        if self.num_local_experts and not 0 < self.num_experts_per_tok <= self.num_local_experts:
            raise ConfigError(
                f"model {self.name!r}: num_experts_per_tok({self.num_experts_per_tok}) must be in "
                f"1..num_local_experts({self.num_local_experts})"
            )
        if not self.parallel_attn and self.block_norms == 1:
            raise ConfigError(
                f"model {self.name!r}: block_norms(1) needs parallel_attn (a sequential block has 2 norms)"
            )
        if self.parallel_attn and self.is_moe:
            raise ConfigError(
                f"model {self.name!r}: parallel_attn with routed experts is not modelled; valid: a dense "
                f"parallel block, or a sequential MoE block"
            )
        if self.is_mla and None in (self.qk_nope_head_dim, self.qk_rope_head_dim, self.v_head_dim):
            raise ConfigError(
                f"model {self.name!r}: MLA (kv_lora_rank set) needs qk_nope_head_dim, qk_rope_head_dim, v_head_dim"
            )

    # ----------------------------------------------------------------------------------- derived sizes
    @property
    def kv_heads(self) -> int:
        """Key/value heads (= query heads for multi-head attention)."""
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def head_size(self) -> int:
        """Per-head width d of queries/keys/values (MHA/GQA)."""
        return self.head_dim or self.hidden_size // self.num_attention_heads

    @property
    def norms_per_layer(self) -> int:
        """Normalisation layers per transformer layer: 2 (sequential), 1 (parallel block with a shared norm)."""
        return self.block_norms or (1 if self.parallel_attn else 2)

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (DeepSeek) is used."""
        return self.kv_lora_rank is not None

    @property
    def qk_head_size(self) -> int:
        """Per-head query/key width (MLA: nope + rope)."""
        if self.is_mla:
            return int(self.qk_nope_head_dim or 0) + int(self.qk_rope_head_dim or 0)
        return self.head_size

    @property
    def v_head_size(self) -> int:
        """Per-head value width."""
        return int(self.v_head_dim) if self.is_mla and self.v_head_dim else self.head_size

    @property
    def kv_heads_effective(self) -> int:
        """Heads whose K and V are materialised in attention (MLA decompresses K/V for every head)."""
        return self.num_attention_heads if self.is_mla else self.kv_heads

    @property
    def is_gated(self) -> bool:
        """The MLP has a gate projection (3 weight matrices instead of 2)."""
        if self.gated_mlp is not None:
            return self.gated_mlp
        return self.hidden_act.lower() in GATED_ACTIVATIONS

    @property
    def is_moe(self) -> bool:
        """Mixture-of-experts model."""
        return self.num_local_experts > 0

    @property
    def expert_intermediate_size(self) -> int:
        """Width of one routed expert."""
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def shared_intermediate_size(self) -> int:
        """Total width of the shared experts of one MoE layer (0 if none)."""
        if self.shared_expert_intermediate_size is not None:
            return self.shared_expert_intermediate_size
        return self.n_shared_experts * self.expert_intermediate_size

    def layer_is_moe(self, layer: int) -> bool:
        """Layer ``layer`` (0-based) has routed experts: DeepSeek's rule
        ``layer >= first_k_dense_replace and layer % moe_layer_freq == 0`` (HF ``modeling_deepseek``)."""
        return self.is_moe and layer >= self.first_k_dense_replace and layer % self.moe_layer_freq == 0

    @property
    def moe_layers(self) -> int:
        """Number of MoE layers."""
        return sum(self.layer_is_moe(i) for i in range(self.num_hidden_layers))
