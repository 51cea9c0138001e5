"""Type and range checks of a model file's raw fields, before they reach :class:`ModelSpec`.

A model file (distcalc YAML/JSON or a Hugging Face ``config.json``) is user input: pydantic's lax mode would
turn ``"n_embd": "768"`` into an integer only *after* :mod:`distcalc.model.hf` has computed
``4 * "768"`` (= ``"768768768768"``, a 14-quadrillion-parameter model), and ``bool("false")`` is ``True``.
So every field a reader uses is checked here, by its JSON type: integers are integers (not strings, floats
or booleans) within a range, booleans are booleans, names are strings, rates are finite numbers in [0, 1).

The upper bounds are sanity caps far above every published model (most layers: 128 in Megatron's 1T
configuration; widest MLP: 81,920 in Megatron's 1T; largest vocabulary: 129,280 in DeepSeek-V3; most routed experts:
256 in DeepSeek-V3; the shipped presets carry these numbers) so that no product of them overflows or takes
minutes to evaluate.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from distcalc.errors import ConfigError
from distcalc.inputs import excerpt, field_error, require_int, require_number

#: Widths, vocabulary and positions: at most 2^24 (16.7 M).
MAX_WIDTH = 1 << 24
#: Layers, heads and experts: at most 2^14 (16,384).
MAX_COUNT = 1 << 14

#: Longest text field (name, family, activation, source citation).
MAX_TEXT = 500

#: Integer fields by name: (lowest valid value, highest valid value). HF names and distcalc's names.
INTEGER_FIELDS: dict[str, tuple[int, int]] = {
    **{name: (1, MAX_WIDTH) for name in (
        "hidden_size", "intermediate_size", "vocab_size", "max_position_embeddings", "head_dim",
        "moe_intermediate_size", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
        "v_head_dim", "n_embd", "n_inner", "n_positions", "sliding_window", "ffn_hidden_size")},
    **{name: (1, MAX_COUNT) for name in (
        "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "n_layer", "n_head",
        "moe_layer_freq", "decoder_sparse_step", "num_kv_heads")},
    **{name: (0, MAX_COUNT) for name in (
        "num_local_experts", "n_routed_experts", "num_experts", "num_experts_per_tok", "n_shared_experts",
        "first_k_dense_replace")},
    "shared_expert_intermediate_size": (0, MAX_WIDTH),
    "block_norms": (1, 2),
}
BOOLEAN_FIELDS = frozenset({"tie_word_embeddings", "gated_mlp", "attention_qkv_bias", "attention_out_bias",
                            "mlp_bias", "attention_bias", "parallel_attn", "use_parallel_residual",
                            "new_decoder_architecture", "multi_query", "alibi", "bias"})
TEXT_FIELDS = frozenset({"name", "model_type", "hidden_act", "activation_function", "activation", "norm_type",
                         "position_embedding", "source"})
RATE_FIELDS = frozenset({"attention_dropout", "hidden_dropout", "embedding_dropout", "attn_pdrop", "resid_pdrop",
                         "embd_pdrop"})


def _problem(key: str, value: Any) -> str | None:
    if key in INTEGER_FIELDS:
        low, high = INTEGER_FIELDS[key]
        return require_int(value, low=low, high=high)
    if key in BOOLEAN_FIELDS and not isinstance(value, bool):
        return f"must be true or false, got {type(value).__name__} {excerpt(value)}"
    if key in TEXT_FIELDS and not isinstance(value, str):
        return f"must be text, got {type(value).__name__} {excerpt(value)}"
    if key in TEXT_FIELDS and len(value) > MAX_TEXT:
        return f"must be at most {MAX_TEXT} characters, got {len(value):,} ({excerpt(value)})"
    if key in RATE_FIELDS:
        problem = require_number(value)
        if problem is None and value >= 1:
            return f"must be in [0, 1), got {value:g}"
        return problem
    return None


def check_model_fields(data: dict[str, Any], source: str | Path, what: str = "model file") -> None:
    """Raise :class:`ConfigError` naming the file (or ``what`` and ``source``) and the first field whose type
    or range is wrong. A field set to ``null`` counts as absent (Hugging Face writes ``"n_inner": null``)."""
    for key, value in data.items():
        if value is None:
            continue
        problem = _problem(key, value)
        if problem:
            raise field_error(ConfigError, what, source, key, problem)
