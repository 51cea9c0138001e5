"""Parameter counts: published totals, an independent closed-form count, config.json import per family."""

from pathlib import Path

import pytest

from distcalc.errors import ConfigError
from distcalc.model import ModelSpec, list_models, load_model

FIXTURES = Path(__file__).parent / "fixtures" / "hf"


def closed_form(h, L, a, kv, f, V, *, gated=True, tied=False, experts=0, norm=1, bias=False, positions=0):
    """Independent count: attention 2h² + 2h·(kv·h/a), MLP (3 or 2)·h·f per expert, 2 norms per layer,
    embeddings; biases as in GPT-2/NeoX (written out separately from distcalc.model.params)."""
    d = h // a
    attention = h * h + 2 * h * kv * d + h * h
    mlp = (3 if gated else 2) * h * f * max(experts, 1)
    router = h * experts
    norms = 2 * norm * h
    biases = (h + 2 * kv * d + h + f + h) if bias else 0
    per_layer = attention + mlp + router + norms + biases
    return L * per_layer + V * h * (1 if tied else 2) + norm * h + positions * h


# (preset, published total, tolerance = half a unit of the last published digit)
PUBLISHED = [
    ("llama2-7b", 6.74e9, 0.005e9),      # Touvron et al. 2023: "6.74B" (HF model card: 6,738,415,616)
    ("llama3-8b", 8.03e9, 0.005e9),      # Meta Llama 3 model card: 8.03B
    ("llama3-70b", 70.6e9, 0.05e9),      # Meta Llama 3 model card: 70.6B
    ("mixtral-8x7b", 46.7e9, 0.05e9),    # Jiang et al. 2024: 46.7B total
    ("gpt3-175b", 174.6e9, 0.05e9),      # Narayanan et al. 2021 (arXiv:2104.04473) Table 1: 174.6B
    ("deepseek-v3", 671e9, 0.5e9),       # DeepSeek-AI 2024: 671B total (without the 14B MTP module)
    ("llama3-405b", 405.8e9, 0.5e9),     # HF model card 405,853,388,800 (≈ 406B)
]


@pytest.mark.parametrize("name, published, tolerance", PUBLISHED)
def test_published_totals(name, published, tolerance):
    assert abs(load_model(name).parameters - published) <= tolerance


def test_mixtral_active_parameters():
    assert abs(load_model("mixtral-8x7b").active_parameters - 12.9e9) <= 0.05e9  # "12.9B active"


@pytest.mark.parametrize(
    "name, kwargs",
    [
        ("llama2-7b", dict(h=4096, L=32, a=32, kv=32, f=11008, V=32000)),
        ("llama2-70b", dict(h=8192, L=80, a=64, kv=8, f=28672, V=32000)),
        ("llama3-8b", dict(h=4096, L=32, a=32, kv=8, f=14336, V=128256)),
        ("llama3-70b", dict(h=8192, L=80, a=64, kv=8, f=28672, V=128256)),
        ("mixtral-8x7b", dict(h=4096, L=32, a=32, kv=8, f=14336, V=32000, experts=8)),
        ("gpt3-175b", dict(h=12288, L=96, a=96, kv=96, f=49152, V=51200, gated=False, tied=True, norm=2,
                           bias=True, positions=2048)),
    ],
)
def test_independent_closed_form(name, kwargs):
    assert load_model(name).parameters == closed_form(**kwargs)


def test_gpt3_is_twelve_l_h_squared_plus_small_terms():
    spec = load_model("gpt3-175b")
    h, L = 12288, 96
    assert spec.parameters == pytest.approx(12 * L * h * h * (1 + 13 / (12 * h)) + (51200 + 2048) * h, rel=1e-6)


@pytest.mark.parametrize("name", list_models())
def test_breakdown_sums_to_total(name):
    spec = load_model(name)
    breakdown = spec.parameter_breakdown()
    assert sum(breakdown.values()) == spec.parameters
    assert {"attention/qkv", "attention/out", "mlp", "embedding", "norm", "lm_head"} <= breakdown.keys()
    if spec.is_moe:
        assert {"mlp/experts", "mlp/router", "mlp/shared"} <= breakdown.keys()


def test_preset_names_are_lowercase_hyphenated():
    expected = {"gpt3-175b", "megatron-22b", "megatron-530b", "megatron-1t", "llama2-7b", "llama2-13b",
                "llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b", "deepseek-v3"}
    assert expected <= set(list_models())
    assert all(n == n.lower() and "_" not in n and " " not in n for n in list_models())


def test_unknown_preset_lists_valid_names():
    with pytest.raises(ConfigError) as info:
        load_model("llama9-1t")
    assert "llama9-1t" in str(info.value) and "llama3-70b" in str(info.value)


# config.json of each family: exact published counts (HF model cards / num_parameters()).
FAMILY_COUNTS = [
    ("llama-2-7b.json", 6_738_415_616),
    ("meta-llama-3-8b.json", 8_030_261_248),
    ("meta-llama-3-70b.json", 70_553_706_496),
    ("mistral-7b-v0.1.json", 7_241_732_096),
    ("mixtral-8x7b-v0.1.json", 46_702_792_704),
    ("qwen2-7b.json", 7_615_616_512),
    ("gpt2.json", 124_439_808),
    ("gpt-neox-20b.json", 20_554_567_680),
]


@pytest.mark.parametrize("filename, count", FAMILY_COUNTS)
def test_config_json_families(filename, count):
    assert load_model(FIXTURES / filename).parameters == count


def test_gpt2_family_mapping():
    spec = load_model(FIXTURES / "gpt2.json")
    assert (spec.hidden_size, spec.num_hidden_layers, spec.num_attention_heads, spec.intermediate_size) == (
        768, 12, 12, 3072)
    assert spec.tie_word_embeddings and spec.position_embedding.value == "learned"
    assert spec.parameter_breakdown()["position_embedding"] == 1024 * 768


def test_qwen2_has_qkv_bias_only():
    spec = load_model(FIXTURES / "qwen2-7b.json")
    assert spec.attention_qkv_bias and not spec.attention_out_bias


def test_unsupported_family(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "t5", "d_model": 512}')
    with pytest.raises(ConfigError, match="t5"):
        load_model(path)


def test_yaml_spec_file(tmp_path):
    path = tmp_path / "tiny.yaml"
    path.write_text("hidden_size: 64\nnum_hidden_layers: 2\nnum_attention_heads: 4\nintermediate_size: 128\n"
                    "vocab_size: 100\nnorm_type: rmsnorm\n")
    spec = load_model(path)
    assert spec.name == "tiny" and spec.parameters == closed_form(h=64, L=2, a=4, kv=4, f=128, V=100)


def test_bad_heads_raise_config_error():
    with pytest.raises(ConfigError, match="num_key_value_heads"):
        ModelSpec(name="x", hidden_size=64, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=4,
                  intermediate_size=128, vocab_size=100, head_dim=16)
