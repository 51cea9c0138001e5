"""Import a Hugging Face ``config.json`` into a :class:`ModelSpec`.

Supported families (``model_type``): llama, mistral, mixtral, qwen2, qwen2_moe, gpt2, gpt_neox, gptj,
falcon, deepseek_v2, deepseek_v3. Family defaults follow ``transformers`` (``configuration_<family>.py`` defaults
and the modelling code): e.g. GPT-2 ties embeddings and uses LayerNorm, biases everywhere and learned
positions; GPT-NeoX has biases and untied embeddings; Qwen2 has Q/K/V biases only. Block layout
(:mod:`distcalc.model.blocks`): GPT-J is always a parallel block with one norm (``GPTJBlock``), GPT-NeoX
follows ``use_parallel_residual`` (default True, two norms), Falcon ``parallel_attn`` (default True; one norm,
two with ``new_decoder_architecture``); Mistral/Mixtral carry ``sliding_window`` (null = none).
"""

from __future__ import annotations

from typing import Any, Callable

from distcalc.errors import ConfigError
from distcalc.model.architecture import NormType, PositionEmbedding
from distcalc.model.spec import ModelSpec


def _get(cfg: dict[str, Any], key: str, name: str, default: Any = ...) -> Any:
    value = cfg.get(key, default)
    if value is ...:
        raise ConfigError(f"config.json for {name!r} lacks the field {key!r} (model_type {cfg.get('model_type')!r})")
    return value


def _llama_like(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """Fields shared by llama, mistral, mixtral, qwen2, deepseek (HF names map one to one)."""
    heads = _get(cfg, "num_attention_heads", name)
    fields = {
        "name": name,
        "model_type": cfg.get("model_type", "llama"),
        "hidden_size": _get(cfg, "hidden_size", name),
        "num_hidden_layers": _get(cfg, "num_hidden_layers", name),
        "num_attention_heads": heads,
        "num_key_value_heads": cfg.get("num_key_value_heads") or heads,
        "intermediate_size": _get(cfg, "intermediate_size", name),
        "vocab_size": _get(cfg, "vocab_size", name),
        "max_position_embeddings": cfg.get("max_position_embeddings", 2048),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "hidden_act": cfg.get("hidden_act", "silu"),
        "gated_mlp": True,
        "norm_type": NormType.RMSNORM,
        "attention_qkv_bias": bool(cfg.get("attention_bias", False)),
        "attention_out_bias": bool(cfg.get("attention_bias", False)),
        "mlp_bias": bool(cfg.get("mlp_bias", False)),
        "position_embedding": PositionEmbedding.ROPE,
        "attention_dropout": float(cfg.get("attention_dropout", 0.0) or 0.0),
    }
    if cfg.get("head_dim") and cfg["head_dim"] != fields["hidden_size"] // heads:
        fields["head_dim"] = cfg["head_dim"]
    return fields


def _llama(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    return _llama_like(cfg, name)


def _mistral(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    fields = _llama_like(cfg, name)
    fields["sliding_window"] = cfg.get("sliding_window") or None  # Mistral-7B-v0.1: 4096; v0.2+: null
    return fields


def _mixtral(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    fields = _mistral(cfg, name)
    fields["num_local_experts"] = _get(cfg, "num_local_experts", name)
    fields["num_experts_per_tok"] = _get(cfg, "num_experts_per_tok", name)
    return fields


def _qwen2(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    fields = _llama_like(cfg, name)
    fields["attention_qkv_bias"] = True  # Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
    fields["attention_out_bias"] = False
    return fields


def _qwen2_moe(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    fields = _qwen2(cfg, name)
    fields.update(
        num_local_experts=_get(cfg, "num_experts", name),
        num_experts_per_tok=_get(cfg, "num_experts_per_tok", name),
        moe_intermediate_size=_get(cfg, "moe_intermediate_size", name),
        shared_expert_intermediate_size=cfg.get("shared_expert_intermediate_size", 0),
        moe_layer_freq=cfg.get("decoder_sparse_step", 1),
    )
    return fields


def _deepseek(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    fields = _llama_like(cfg, name)
    fields.update(
        num_local_experts=cfg.get("n_routed_experts") or 0,
        num_experts_per_tok=cfg.get("num_experts_per_tok") or 0,
        moe_intermediate_size=cfg.get("moe_intermediate_size"),
        n_shared_experts=cfg.get("n_shared_experts") or 0,
        moe_layer_freq=cfg.get("moe_layer_freq", 1),
        first_k_dense_replace=cfg.get("first_k_dense_replace", 0),
        q_lora_rank=cfg.get("q_lora_rank"),
        kv_lora_rank=cfg.get("kv_lora_rank"),
        qk_nope_head_dim=cfg.get("qk_nope_head_dim"),
        qk_rope_head_dim=cfg.get("qk_rope_head_dim"),
        v_head_dim=cfg.get("v_head_dim"),
    )
    return fields


def _gpt2(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """GPT-2 names: n_embd, n_layer, n_head, n_inner (None = 4·n_embd), n_positions, *_pdrop."""
    hidden = _get(cfg, "n_embd", name)
    return {
        "name": name,
        "model_type": "gpt2",
        "hidden_size": hidden,
        "num_hidden_layers": _get(cfg, "n_layer", name),
        "num_attention_heads": _get(cfg, "n_head", name),
        "intermediate_size": cfg.get("n_inner") or 4 * hidden,
        "vocab_size": _get(cfg, "vocab_size", name),
        "max_position_embeddings": cfg.get("n_positions", 1024),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", True)),
        "hidden_act": cfg.get("activation_function", "gelu_new"),
        "gated_mlp": False,
        "norm_type": NormType.LAYERNORM,
        "attention_qkv_bias": True,
        "attention_out_bias": True,
        "mlp_bias": True,
        "position_embedding": PositionEmbedding.LEARNED,
        "attention_dropout": float(cfg.get("attn_pdrop", 0.1)),
        "hidden_dropout": float(cfg.get("resid_pdrop", 0.1)),
        "embedding_dropout": float(cfg.get("embd_pdrop", 0.1)),
    }


def _gpt_neox(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """GPT-NeoX: HF names for sizes, LayerNorm, biases (``attention_bias`` default True), untied, rotary."""
    bias = bool(cfg.get("attention_bias", True))
    return {
        "name": name,
        "model_type": "gpt_neox",
        "hidden_size": _get(cfg, "hidden_size", name),
        "num_hidden_layers": _get(cfg, "num_hidden_layers", name),
        "num_attention_heads": _get(cfg, "num_attention_heads", name),
        "intermediate_size": _get(cfg, "intermediate_size", name),
        "vocab_size": _get(cfg, "vocab_size", name),
        "max_position_embeddings": cfg.get("max_position_embeddings", 2048),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "hidden_act": cfg.get("hidden_act", "gelu"),
        "gated_mlp": False,
        "norm_type": NormType.LAYERNORM,
        "attention_qkv_bias": bias,
        "attention_out_bias": bias,
        "mlp_bias": True,
        "position_embedding": PositionEmbedding.ROPE,
        "attention_dropout": float(cfg.get("attention_dropout", 0.0) or 0.0),
        "hidden_dropout": float(cfg.get("hidden_dropout", 0.0) or 0.0),
        "parallel_attn": bool(cfg.get("use_parallel_residual", True)),
        "block_norms": 2,
    }


def _gptj(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """GPT-J (``GPTJBlock``): GPT-2's names, a parallel block with one ``ln_1``; q/k/v/out without bias,
    MLP with bias, rotary, untied (its ``lm_head`` bias, V parameters, is not counted)."""
    fields = _gpt2(cfg, name)
    fields.update(
        model_type="gptj",
        max_position_embeddings=cfg.get("n_positions", 2048),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        attention_qkv_bias=False,
        attention_out_bias=False,
        position_embedding=PositionEmbedding.ROPE,
        attention_dropout=float(cfg.get("attn_pdrop", 0.0) or 0.0),
        hidden_dropout=float(cfg.get("resid_pdrop", 0.0) or 0.0),
        embedding_dropout=float(cfg.get("embd_pdrop", 0.0) or 0.0),
        parallel_attn=True,
        block_norms=1,
    )
    return fields


def _falcon(cfg: dict[str, Any], name: str) -> dict[str, Any]:
    """Falcon (``FalconDecoderLayer``): LayerNorm, GeLU MLP of ``ffn_hidden_size`` (default 4h), ``bias`` on
    every linear, multi-query (``multi_query``) or ``num_kv_heads`` groups with ``new_decoder_architecture``
    (which also keeps two norms, ``ln_attn`` and ``ln_mlp``), rotary unless ``alibi``, tied by default."""
    hidden = _get(cfg, "hidden_size", name)
    heads = _get(cfg, "num_attention_heads", name)
    new_arch = bool(cfg.get("new_decoder_architecture", False))
    if new_arch:
        kv = cfg.get("num_kv_heads") or heads
    else:
        kv = 1 if cfg.get("multi_query", True) else heads
    bias = bool(cfg.get("bias", False))
    parallel = bool(cfg.get("parallel_attn", True)) or new_arch
    neox_names = {"intermediate_size": cfg.get("ffn_hidden_size") or 4 * hidden, "attention_bias": bias,
                  "hidden_act": cfg.get("activation", "gelu"), "use_parallel_residual": parallel}
    fields = _gpt_neox({**cfg, **neox_names}, name)
    fields.update(
        model_type="falcon",
        num_key_value_heads=kv,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", True)),
        mlp_bias=bias,
        position_embedding=PositionEmbedding.ALIBI if cfg.get("alibi") else PositionEmbedding.ROPE,
        block_norms=2 if new_arch or not parallel else 1,
    )
    return fields


FAMILIES: dict[str, Callable[[dict[str, Any], str], dict[str, Any]]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen2_moe": _qwen2_moe,
    "gpt2": _gpt2,
    "gpt_neox": _gpt_neox,
    "gptj": _gptj,
    "falcon": _falcon,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
}


def spec_from_hf_config(cfg: dict[str, Any], name: str) -> ModelSpec:
    """Build a :class:`ModelSpec` from a parsed Hugging Face ``config.json``."""
    model_type = cfg.get("model_type")
    if model_type not in FAMILIES:
        raise ConfigError(
            f"config.json model_type {model_type!r} is not supported; supported: {', '.join(sorted(FAMILIES))}"
        )
    fields = FAMILIES[model_type](cfg, name)
    fields["source"] = f"Hugging Face config.json (model_type {model_type})"
    return ModelSpec(**fields)
