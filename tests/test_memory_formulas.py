"""Memory formulas against closed forms written out independently (Korthikanti Table 2, ZeRO, schedules)."""

import numpy as np
import pytest

from distcalc.errors import ConfigError
from distcalc.hardware import list_gpus, load_gpu
from distcalc.memory import (
    MemoryOptions, Recipe, bytes_per_parameter, in_flight_micro_batches, layer_activation_bytes, memory_batch,
    memory_report, model_state_bytes,
)
from distcalc.model.dims import model_dims
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig, validate_for_model
from distcalc.parallel_batch import configs_batch

GPT3 = load_model("gpt3-175b")  # dropout 0.1, no gated MLP: Korthikanti's model


def table2(s, b, h, a, t, technique):
    """Korthikanti et al. 2022 Table 2, bytes per layer."""
    sbh = s * b * h
    return {
        "none": sbh * (10 + 24 / t + 5 * a * s / (h * t)),
        "sp": sbh * (34 / t + 5 * a * s / (h * t)),
        "selective": sbh * (10 + 24 / t),
        "sp+selective": sbh * 34 / t,
        "full": 2 * sbh,
    }[technique]


@pytest.mark.parametrize("t", [1, 2, 4, 8])
@pytest.mark.parametrize("technique, sp, recompute",
                         [("none", False, 0), ("sp", True, 0), ("selective", False, 1), ("sp+selective", True, 1),
                          ("full", False, 2)])
def test_korthikanti_table2(t, technique, sp, recompute):
    s, b = 2048, 2
    stored, _ = layer_activation_bytes(model_dims(GPT3), False, s, b, t, 1, sp, recompute, False)
    assert float(stored) == pytest.approx(table2(s, b, 12288, 96, t, technique), rel=1e-12)


def test_flash_attention_drops_the_score_term():
    s, b, t, h, a = 4096, 1, 8, 12288, 96
    stored, _ = layer_activation_bytes(model_dims(GPT3), False, s, b, t, 1, False, 0, True)
    assert float(stored) == pytest.approx(s * b * h * (10 + 24 / t) + 4 * a * s * b / t, rel=1e-12)


def test_gqa_and_gated_mlp_generalisation():
    """Llama-3-70B (no dropout, GQA 64/8, SwiGLU f=28672): norm+QKV inputs 8sbh (replicated), Q and context
    2·s·b·h each, K and V 2·s·b·(8·128) each, MLP 6·s·b·f."""
    s, b, t, h, kv_width, f = 8192, 1, 8, 8192, 8 * 128, 28672
    stored, _ = layer_activation_bytes(model_dims(load_model("llama3-70b")), False, s, b, t, 1, False, 0, False)
    expected = s * b * (8 * h + (2 * h + 4 * kv_width + 2 * h + 6 * f + 2 * 64 * s) / t)
    assert float(stored) == pytest.approx(expected, rel=1e-12)


def test_recompute_workspace_is_the_dropped_part():
    dims, s, b, t = model_dims(GPT3), 2048, 1, 8
    none, ws_none = layer_activation_bytes(dims, False, s, b, t, 1, True, 0, False)
    for code in (1, 2):
        stored, workspace = layer_activation_bytes(dims, False, s, b, t, 1, True, code, False)
        assert float(stored + workspace) == pytest.approx(float(none))
    assert float(ws_none) == 0


def test_context_parallel_divides_sequence_terms():
    dims = model_dims(load_model("llama3-8b"))
    one, _ = layer_activation_bytes(dims, False, 8192, 1, 1, 1, False, 0, True)
    two, _ = layer_activation_bytes(dims, False, 8192, 1, 1, 2, False, 0, True)
    assert float(two) == pytest.approx(float(one) / 2)


def test_in_flight_per_schedule():
    pp, m = 8, 64
    stages = np.arange(pp)
    assert list(in_flight_micro_batches(1, pp, stages, 1, m)) == list(pp - stages)  # 1F1B
    assert list(in_flight_micro_batches(0, pp, stages, 1, m)) == [m] * pp  # GPipe
    assert list(in_flight_micro_batches(3, pp, stages, 1, m)) == [pp] * pp  # ZB-H1 bound
    assert float(in_flight_micro_batches(1, pp, 0, 1, 3)) == 3  # fewer micro-batches than stages
    v = 3  # interleaved, stage 0: L·(1 + (p−1)/(p·v)) layers = units · L/(p·v)
    units = float(in_flight_micro_batches(2, pp, 0, v, m))
    assert units / (pp * v) == pytest.approx(1 + (pp - 1) / (pp * v))


def test_recipes_bytes_per_parameter():
    assert bytes_per_parameter(Recipe.MIXED)["total"] == 18  # Korthikanti / Megatron
    assert bytes_per_parameter(Recipe.MIXED_16BIT_GRADS)["total"] == 16  # ZeRO 2 + 2 + K (K = 12)


@pytest.mark.parametrize("d", [1, 4, 64])
def test_zero_table1_formulas_and_megatron_distributed_optimizer(d):
    psi = 7.5e9
    zero_recipe = bytes_per_parameter(Recipe.MIXED_16BIT_GRADS)
    args = (psi, zero_recipe["weights"], zero_recipe["gradients"], zero_recipe["optimizer"])
    assert sum(model_state_bytes(*args, 1, d)) == pytest.approx(psi * (4 + 12 / d))
    assert sum(model_state_bytes(*args, 2, d)) == pytest.approx(psi * (2 + 14 / d))
    assert sum(model_state_bytes(*args, 3, d)) == pytest.approx(psi * 16 / d)
    mixed = bytes_per_parameter(Recipe.MIXED)  # Megatron dist_optimizer.md: 6 + 12/d for bf16 + fp32 grads
    assert sum(model_state_bytes(psi, mixed["weights"], mixed["gradients"], mixed["optimizer"], 1, d)) == \
        pytest.approx(psi * (6 + 12 / d))


def test_distributed_optimizer_equals_zero1():
    base = dict(gpus=16, tp=2, pp=2, seq_len=2048)
    a = memory_report("llama2-7b", ParallelConfig(**base, distributed_optimizer=True))
    b = memory_report("llama2-7b", ParallelConfig(**base, zero=1))
    assert a.total_bytes == b.total_bytes


def test_tied_embedding_copy_on_last_stage():
    one = memory_report("gpt3-175b", ParallelConfig(tp=8, pp=1, seq_len=2048)).stages[0]
    spec = load_model("gpt3-175b")
    layers = spec.parameters - spec.parameter_breakdown()["embedding"] - 2048 * 12288 - 2 * 12288
    # pp = 1: the tied matrix is held once
    assert one.parameters - one.layer_parameters == 51200 * 12288 // 8 + 2048 * 12288 + 2 * 12288
    two = memory_report("gpt3-175b", ParallelConfig(tp=8, pp=2, seq_len=2048)).stages
    assert two[1].parameters - two[1].layer_parameters == 51200 * 12288 // 8 + 2 * 12288  # own LM-head copy
    assert layers > 0


def test_expert_parallel_shards_experts():
    spec = load_model("mixtral-8x7b")
    base = dict(gpus=16, tp=2, seq_len=4096, zero=1)
    ep1 = memory_report(spec, ParallelConfig(**base)).worst
    ep8 = memory_report(spec, ParallelConfig(**base, ep=8)).worst
    experts_per_gpu = 32 * 8 * 3 * 4096 * 14336 / 2
    assert ep1.parameters - ep8.parameters == pytest.approx(experts_per_gpu * (1 - 1 / 8), rel=1e-9)


def test_logits_and_loss_on_last_stage_only():
    stages = memory_report("llama3-8b", ParallelConfig(pp=4, tp=2, seq_len=4096, micro_batch=2)).stages
    assert all(s.loss_workspace_bytes == 0 for s in stages[:-1])
    assert stages[-1].loss_workspace_bytes == pytest.approx(4 * 4096 * 2 * 128256 / 2)


CONFIGS = [
    ("llama3-8b", dict(gpus=32, tp=2, pp=4, zero=2, recompute="full", sequence_parallel=True, global_batch=64)),
    ("mixtral-8x7b", dict(gpus=64, tp=2, pp=4, ep=8, zero=1, vpp=2, global_batch=128, flash_attention=False)),
    ("deepseek-v3", dict(gpus=244, pp=61, tp=1, dp=4, ep=4, zero=3, global_batch=488, schedule="gpipe")),
    ("gpt3-175b", dict(gpus=64, tp=8, pp=8, vpp=3, recompute="selective", flash_attention=False, seq_len=2048)),
    ("llama2-70b", dict(gpus=64, tp=8, pp=2, cp=2, schedule="zero-bubble", dtype="fp8", global_batch=16)),
]


@pytest.mark.parametrize("name, kwargs", CONFIGS)
def test_batch_equals_report(name, kwargs):
    """memory_batch on one configuration reproduces memory_report's worst stage line by line."""
    config = ParallelConfig(**kwargs)
    report = memory_report(name, config)
    batch = memory_batch(load_model(name), **configs_batch([config]),
                         weight_cache_bytes=[config.dtype.weight_cache_bytes_per_parameter])
    assert int(batch["worst_stage"][0]) == report.worst_stage
    for key, value in report.worst.model_dump().items():
        if key != "stage":
            assert float(batch[key][0]) == pytest.approx(value, rel=1e-12), key


def test_batch_equals_report_on_random_sample():
    rng = np.random.default_rng(7)
    for name in ("llama3-8b", "mixtral-8x7b", "deepseek-v3"):
        spec = load_model(name)
        rows, configs = [], []
        while len(configs) < 40:
            tp = int(rng.choice([1, 2, 4, 8]))
            pp = int(rng.choice([1, 2, 4] if spec.num_hidden_layers % 4 == 0 else [1, 61]))
            dp = int(rng.choice([1, 2, 4, 8]))
            ep = int(rng.choice([1, 2, 4, 8])) if spec.is_moe else 1
            vpp = int(rng.choice([1, 2])) if pp > 1 and spec.num_hidden_layers % (2 * pp) == 0 else 1
            kwargs = dict(gpus=tp * pp * dp, tp=tp, pp=pp, dp=dp, ep=ep, vpp=vpp, zero=int(rng.integers(0, 4)),
                          sequence_parallel=bool(rng.integers(0, 2)),
                          recompute=["none", "selective", "full"][rng.integers(0, 3)],
                          micro_batch=int(rng.choice([1, 2])), seq_len=int(rng.choice([1024, 4096])),
                          flash_attention=bool(rng.integers(0, 2)),
                          global_batch=dp * 2 * int(rng.choice([1, 2, 8])) * 2)
            try:
                config = ParallelConfig(**kwargs)
                validate_for_model(config, spec)
            except ConfigError:
                continue
            configs.append(config)
            rows.append(memory_report(spec, config).total_bytes)
        np.testing.assert_allclose(memory_batch(spec, **configs_batch(configs))["total_bytes"], rows, rtol=1e-12)


def test_options_lines_are_explicit():
    options = MemoryOptions(comm_buffer_bytes=0, cuda_context_bytes=0, allocator_reserve_fraction=0.0)
    worst = memory_report("llama3-8b", ParallelConfig(gpus=8, tp=8), options=options).worst
    assert worst.total_bytes == pytest.approx(worst.model_states_bytes + worst.activations_bytes)
    default = memory_report("llama3-8b", ParallelConfig(gpus=8, tp=8)).worst
    assert default.communication_buffers_bytes == 512 * 2**20 and default.cuda_context_bytes == 512 * 2**20
    rest = default.total_bytes - default.allocator_reserve_bytes
    assert default.allocator_reserve_bytes == pytest.approx(0.05 * rest)


def test_fits_against_gpu():
    config = ParallelConfig(gpus=8, tp=8, seq_len=4096)
    assert memory_report("llama3-8b", config, "h100-sxm").fits is True
    assert memory_report("llama3-405b", ParallelConfig(gpus=8, tp=8, pp=1, seq_len=4096), "h100-sxm").fits is False


def test_gpu_presets():
    assert {"a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200", "tpu-v5p"} <= set(list_gpus())
    h100 = load_gpu("h100-sxm")
    assert h100.peak_flops("bf16") == 989.4e12 and h100.memory_bytes == 80 * 2**30
    assert load_gpu("a100-80gb").peak_flops("fp16") == 312e12
    with pytest.raises(ConfigError, match="fp8"):
        load_gpu("a100-80gb").peak_flops("fp8")
    with pytest.raises(ConfigError, match="h100-sxm"):
        load_gpu("h100")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(gpus=64, tp=8, pp=4, dp=3), "tp(8) * pp(4) * cp(1) * dp(3) = 96 != gpus(64)"),
        (dict(gpus=64, tp=3), "gpus(64) is not divisible by tp(3) * pp(1) * cp(1) = 3"),
        (dict(gpus=16, tp=2, global_batch=12), "global_batch(12) is not divisible by micro_batch(1) * dp(8) = 8"),
        (dict(gpus=8, ep=16), "ep(16) must divide dp(8) * cp(1) = 8"),
        (dict(gpus=8, pp=2, vpp=2, schedule="1f1b"), "vpp(2) > 1 needs schedule interleaved"),
    ],
)
def test_parallel_config_errors_name_every_factor(kwargs, message):
    with pytest.raises(ConfigError) as info:
        ParallelConfig(**kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize(
    "name, kwargs, message",
    [
        ("llama3-70b", dict(tp=3), "num_attention_heads(64) is not divisible by tp(3); valid tp: 1, 2, 4, 8"),
        ("llama3-70b", dict(tp=16), "num_key_value_heads(8) is not divisible by tp(16)"),
        ("llama3-70b", dict(pp=3), "num_hidden_layers(80) is not divisible by pp(3) * vpp(1) = 3"),
        ("mixtral-8x7b", dict(gpus=3, ep=3), "num_local_experts(8) is not divisible by ep(3)"),
        ("llama3-8b", dict(gpus=2, ep=2), "is dense: ep(2) must be 1"),
        ("llama3-8b", dict(cp=3, seq_len=4096), "seq_len(4096) is not divisible by 2 * cp(3) = 6"),
        ("gpt3-175b", dict(tp=8, seq_len=4096), "seq_len(4096) exceeds its learned position table"),
    ],
)
def test_model_checks(name, kwargs, message):
    with pytest.raises(ConfigError) as info:
        memory_report(name, ParallelConfig(**kwargs))
    assert message in str(info.value)


def test_hidden_not_divisible_by_tp():
    from distcalc.model import ModelSpec

    spec = ModelSpec(name="odd", hidden_size=1001, num_hidden_layers=2, num_attention_heads=8, head_dim=128,
                     intermediate_size=4096, vocab_size=1000)
    with pytest.raises(ConfigError, match=r"hidden_size\(1001\) is not divisible by tp\(8\); valid tp: 1, 7, 11"):
        memory_report(spec, ParallelConfig(tp=8))
