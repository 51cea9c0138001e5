"""Parallel attention+MLP blocks, sliding-window attention, GQA/MQA and tied embeddings end to end
(distcalc.model.blocks): parameter goldens, HF import fields, TP messages, FLOPs, kernel time, memory."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.compute import model_dims as compute_dims
from distcalc.compute import layer_times, model_flops_per_step
from distcalc.compute.device import load_device
from distcalc.compute.flops import attended_pairs, attention_core_flops_per_token, effective_key_length
from distcalc.errors import ConfigError
from distcalc.memory.activations import layer_activation_bytes
from distcalc.model.dims import model_dims as memory_dims
from distcalc.model import ModelSpec, load_model
from distcalc.model.hf import spec_from_hf_config
from distcalc.parallel import ParallelConfig
from distcalc.traffic import tp_layer_messages

PYTHIA_6_9B = dict(model_type="gpt_neox", hidden_size=4096, num_attention_heads=32, num_hidden_layers=32,
                   intermediate_size=16384, vocab_size=50432, use_parallel_residual=True, max_position_embeddings=2048)
FALCON_7B = dict(model_type="falcon", hidden_size=4544, num_attention_heads=71, num_hidden_layers=32,
                 vocab_size=65024, multi_query=True, parallel_attn=True, bias=False, alibi=False,
                 new_decoder_architecture=False)
GPTJ_6B = dict(model_type="gptj", n_embd=4096, n_layer=28, n_head=16, vocab_size=50400, n_positions=2048,
               rotary_dim=64, activation_function="gelu_new")
MISTRAL_7B = dict(model_type="mistral", hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                  num_hidden_layers=32, intermediate_size=14336, vocab_size=32000, sliding_window=4096,
                  max_position_embeddings=32768)


def _variant(name: str, **update) -> ModelSpec:
    return ModelSpec(**{**load_model(name).model_dump(), **update})


# ------------------------------------------------------------------------------------------ goldens
def test_pythia_6_9b_parameters_match_the_pythia_paper_exactly():
    """Biderman et al. 2023 (Pythia, arXiv:2304.01373) Table 1: 6,857,302,016 total, 6,444,163,072
    non-embedding; GPT-NeoX parallel residual with two LayerNorms per layer."""
    spec = spec_from_hf_config(PYTHIA_6_9B, "pythia-6.9b")
    assert spec.parallel_attn and spec.norms_per_layer == 2
    parts = spec.parameter_breakdown()
    assert spec.parameters == 6_857_302_016
    assert spec.parameters - parts["embedding"] - parts["lm_head"] == 6_444_163_072


def test_falcon_7b_parameters_match_the_published_count():
    """Hugging Face tiiuae/falcon-7b (safetensors metadata): 6.92B parameters; multi-query, one shared
    LayerNorm per parallel block, tied embeddings. Tolerance 0.1 %."""
    spec = spec_from_hf_config(FALCON_7B, "falcon-7b")
    assert spec.kv_heads == 1 and spec.norms_per_layer == 1 and spec.tie_word_embeddings
    assert spec.parameters == pytest.approx(6.92e9, rel=1e-3)
    assert spec.parameters == 6_921_720_704


def test_gptj_6b_parameters_match_the_published_count_within_0_1_percent():
    """mesh-transformer-jax README (Wang & Komatsuzaki 2021): 6,053,381,344 parameters. Ours counts the HF
    modules without the V-element lm_head bias: 6,050,832,384 (0.04 % below)."""
    spec = spec_from_hf_config(GPTJ_6B, "gpt-j-6b")
    assert spec.parallel_attn and spec.norms_per_layer == 1 and not spec.tie_word_embeddings
    assert spec.parameters == pytest.approx(6_053_381_344, rel=1e-3)


def test_mistral_7b_parameters_and_window():
    """Hugging Face mistralai/Mistral-7B-v0.1: 7,241,732,096 parameters (safetensors), GQA 32/8,
    ``sliding_window`` 4096 (Jiang et al. 2023 §2)."""
    spec = spec_from_hf_config(MISTRAL_7B, "mistral-7b")
    assert spec.parameters == 7_241_732_096
    assert spec.sliding_window == 4096 and spec.kv_heads == 8
    assert spec_from_hf_config({**MISTRAL_7B, "sliding_window": None}, "m").sliding_window is None


# ------------------------------------------------------------------------------------------ HF import
def test_hf_block_layout_fields():
    neox = spec_from_hf_config({**PYTHIA_6_9B, "use_parallel_residual": False}, "neox-seq")
    assert not neox.parallel_attn and neox.norms_per_layer == 2
    falcon40 = spec_from_hf_config({**FALCON_7B, "hidden_size": 8192, "num_attention_heads": 128,
                                    "num_hidden_layers": 60, "new_decoder_architecture": True,
                                    "num_kv_heads": 8}, "falcon-40b")
    assert falcon40.parallel_attn and falcon40.norms_per_layer == 2 and falcon40.kv_heads == 8
    falcon_mha = spec_from_hf_config({**FALCON_7B, "multi_query": False, "num_attention_heads": 32,
                                      "hidden_size": 4096}, "falcon-mha")
    assert falcon_mha.kv_heads == 32
    mixtral = spec_from_hf_config({**MISTRAL_7B, "model_type": "mixtral", "num_local_experts": 8,
                                   "num_experts_per_tok": 2}, "mixtral")
    assert mixtral.sliding_window == 4096


def test_a_sequential_block_with_one_norm_is_refused():
    with pytest.raises(ConfigError, match="block_norms"):
        _variant("llama3-8b", block_norms=1)


def test_a_parallel_moe_block_is_refused_not_mispriced():
    with pytest.raises(ConfigError, match="parallel_attn with routed experts"):
        _variant("mixtral-8x7b", parallel_attn=True)


def test_one_norm_less_per_layer_is_the_only_parameter_change():
    seq, par = load_model("gpt3-175b"), _variant("gpt3-175b", parallel_attn=True)
    assert seq.parameters - par.parameters == seq.num_hidden_layers * 2 * seq.hidden_size


# ------------------------------------------------------------------------------------------ traffic
@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 8), s=st.sampled_from([512, 2048, 8192]), h=st.sampled_from([1024, 4096, 12288]),
       t=st.sampled_from([1, 2, 4, 8]), sp=st.integers(0, 1), rc=st.integers(0, 2), cp=st.sampled_from([1, 2]))
def test_parallel_block_sends_half_the_tp_collectives_of_the_same_size(b, s, h, t, sp, rc, cp):
    seq = tp_layer_messages(b, s, h, 2, t, sp, rc, cp)
    par = tp_layer_messages(b, s, h, 2, t, sp, rc, cp, syncs=1)
    assert len(seq) == len(par)
    for a, p in zip(seq, par):
        assert (a.collective, a.phase, a.overlappable) == (p.collective, p.phase, p.overlappable)
        assert float(p.size_bytes) == float(a.size_bytes)
        assert float(p.count) == pytest.approx(float(a.count) / 2)


def _tp_run(spec: ModelSpec, sp: bool, overlap: bool = False):
    config = ParallelConfig(gpus=64, tp=8, pp=2, micro_batch=1, global_batch=64, seq_len=2048, dtype="bf16",
                            sequence_parallel=sp)
    return analyze(spec, "dgx-h100", config, AnalyzeOptions(tp_comm_overlap=overlap))


@pytest.mark.parametrize("sp,overlap", [(False, False), (True, False), (True, True)])
def test_parallel_block_halves_tp_traffic_and_exposure_in_the_step(sp, overlap):
    seq, par = _tp_run(load_model("gpt3-175b"), sp, overlap), _tp_run(_variant("gpt3-175b", parallel_attn=True), sp,
                                                                        overlap)
    s_link, p_link = seq.time_breakdown["tp_on_link_s"], par.time_breakdown["tp_on_link_s"]
    assert 0.0 < p_link < 0.6 * s_link  # embedding/head collectives are not halved
    assert 0.0 < par.time_breakdown["tp_exposed_s"] < seq.time_breakdown["tp_exposed_s"]
    assert par.step_time_s < seq.step_time_s
    assert par.flops["model_flops_per_step"] == pytest.approx(seq.flops["model_flops_per_step"])


# ------------------------------------------------------------------------------------------ FLOPs
@settings(max_examples=60, deadline=None)
@given(s=st.integers(1, 20000), w=st.integers(1, 20000))
def test_attended_pairs_match_the_discrete_count_within_one_row(s, w):
    exact = sum(min(i, w) for i in range(1, s + 1))
    assert abs(float(attended_pairs(s, w)) - exact) <= s
    assert 0 < float(effective_key_length(s, w)) <= s
    assert float(attended_pairs(s, w)) <= float(attended_pairs(s, w + 1)) + 1e-9


def test_window_at_least_the_sequence_changes_nothing():
    full, windowed = compute_dims(load_model("llama3-8b")), compute_dims(_variant("llama3-8b", sliding_window=8192))
    for s in (1024, 8192):
        assert model_flops_per_step(windowed, 8, s) == model_flops_per_step(full, 8, s)


def test_mistral_window_attention_flops_golden():
    """s = 8192, w = 4096: effective key length 2w − w²/s = 6144 (3/4 of the full 8192 the MFU convention
    counts), i.e. attention FLOPs per token 2·6144·a·(d + d_v)."""
    dims = compute_dims(spec_from_hf_config(MISTRAL_7B, "mistral-7b"))
    assert float(effective_key_length(8192, 4096)) == 6144.0
    assert float(attention_core_flops_per_token(dims, 8192)) == 2 * 6144 * 32 * (128 + 128)
    unwindowed = compute_dims(spec_from_hf_config({**MISTRAL_7B, "sliding_window": None}, "m"))
    saved = model_flops_per_step(unwindowed, 1, 8192) - model_flops_per_step(dims, 1, 8192)
    assert saved == pytest.approx(3 * 8192 * 32 * 2 * 2048 * 32 * 256)


def test_window_shortens_flash_attention_time_but_not_the_unfused_path():
    def attention_s(spec: ModelSpec, flash: str) -> float:
        device = load_device("h100-sxm", "bf16")
        return float(layer_times(compute_dims(spec), device, 1, 16384, 1, flash_attention=int(flash == "on"))
                     .forward_attention_s)
    full, windowed = load_model("llama3-8b"), _variant("llama3-8b", sliding_window=4096)
    assert attention_s(windowed, "on") < 0.5 * attention_s(full, "on")
    assert attention_s(windowed, "off") == pytest.approx(attention_s(full, "off"))


# ------------------------------------------------------------------------------------------ memory
@pytest.mark.parametrize("norms,saved_bytes_per_element", [(1, 4.0), (2, 2.0)])
def test_parallel_block_stores_one_block_input_and_each_norm_output_once(norms, saved_bytes_per_element):
    """Sequential: norm input + GEMM input per sub-block, 8 B per residual element; parallel: block input +
    ``norms`` norm outputs, (1 + norms)·2 B."""
    seq = memory_dims(load_model("llama3-8b"))
    par = memory_dims(_variant("llama3-8b", parallel_attn=True, block_norms=norms))
    b, s = 2, 4096
    args = dict(seq_len=s, micro_batch=b, tp=1, cp=1, sequence_parallel=False, recompute=0, flash=True)
    stored_seq, _ = layer_activation_bytes(seq, False, **args)
    stored_par, _ = layer_activation_bytes(par, False, **args)
    assert float(stored_seq - stored_par) == pytest.approx(saved_bytes_per_element * b * s * 4096)


# ------------------------------------------------------------------------------------------ GQA / MQA, tied
def test_gqa_kv_heads_reach_flops_memory_and_cp_messages():
    mha, gqa = load_model("llama3-8b"), _variant("llama3-8b", num_key_value_heads=2)  # 8 -> 2 KV heads
    assert mha.parameters - gqa.parameters == 32 * 4096 * 2 * 6 * 128
    assert compute_dims(gqa).qkv_width == (32 + 2 * 2) * 128
    config = ParallelConfig(gpus=16, tp=2, pp=1, cp=2, micro_batch=1, global_batch=16, seq_len=8192, dtype="bf16")
    a, g = analyze(mha, "dgx-h100", config), analyze(gqa, "dgx-h100", config)
    cp_bytes = lambda r: sum(m["size_bytes"] * m["count"] for m in r.communication if m["dim"] == "cp")  # noqa: E731
    assert cp_bytes(g) == pytest.approx(cp_bytes(a) / 4)
    assert g.memory["activations_bytes"] < a.memory["activations_bytes"]


def test_tied_embeddings_drop_the_output_layer_parameters_and_add_the_pipeline_sync():
    untied, tied = load_model("llama3-8b"), _variant("llama3-8b", tie_word_embeddings=True)
    assert untied.parameters - tied.parameters == 128256 * 4096
    config = ParallelConfig(gpus=16, tp=1, pp=2, micro_batch=1, global_batch=64, seq_len=4096, dtype="bf16")
    tied_report, untied_report = analyze(tied, "dgx-h100", config), analyze(untied, "dgx-h100", config)
    assert tied_report.time_breakdown["embedding_sync_s"] > 0.0 == untied_report.time_breakdown["embedding_sync_s"]
    assert np.isfinite(tied_report.step_time_s)


def test_analyze_states_the_window_convention_of_its_mfu():
    config = ParallelConfig(gpus=8, tp=1, pp=1, micro_batch=1, global_batch=8, seq_len=8192, dtype="bf16")
    windowed = analyze(_variant("llama3-8b", sliding_window=4096), "dgx-h100", config)
    full = analyze("llama3-8b", "dgx-h100", config)
    assert "2w - w^2/s" in windowed.flops["mfu_formula"] and "window" not in full.flops["mfu_formula"]
    assert windowed.flops["model_flops_per_step"] < full.flops["model_flops_per_step"]
    assert windowed.step_time_s < full.step_time_s and windowed.tokens_per_s > full.tokens_per_s


def test_one_shared_norm_runs_half_the_norm_work_of_two_in_eager_pytorch_too():
    """Eager composite RMSNorm (torchtitan without fused_rmsnorm): one norm's bytes and kernels, not two."""
    from dataclasses import replace

    device = replace(load_device("a100-80gb", "bf16"), eager_elementwise=True)
    two = compute_dims(_variant("llama3-8b", parallel_attn=True, block_norms=2))
    one = compute_dims(_variant("llama3-8b", parallel_attn=True, block_norms=1))
    t_two = layer_times(two, device, 1, 4096, 1, flash_attention=1)
    t_one = layer_times(one, device, 1, 4096, 1, flash_attention=1)
    assert float(t_one.forward_elementwise_s) < float(t_two.forward_elementwise_s)
    assert float(t_one.forward_gemm_s) == float(t_two.forward_gemm_s)


@pytest.mark.parametrize("field,value", [("parallel_attn", "false"), ("use_parallel_residual", 1),
                                         ("sliding_window", "4096"), ("sliding_window", 0), ("block_norms", 3),
                                         ("num_kv_heads", 2.5)])
def test_block_fields_of_a_model_file_are_type_checked(tmp_path, field, value):
    import json

    distcalc_file = {"name": "x", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "intermediate_size": 128, "vocab_size": 100}
    base = {"parallel_attn": FALCON_7B, "num_kv_heads": FALCON_7B, "sliding_window": MISTRAL_7B,
            "block_norms": distcalc_file}.get(field, PYTHIA_6_9B)
    path = tmp_path / ("config.json" if "model_type" in base else "model.json")
    path.write_text(json.dumps({**base, field: value}))
    with pytest.raises(ConfigError, match=field):
        load_model(path)
