"""Compute model: FLOP formulas (Korthikanti App. A), GEMM efficiency physics, layer times."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.compute import (gemm_efficiency, gemm_time_s, hardware_flops_per_step, layer_times, load_device,
                              model_dims, model_flops_per_step)
from distcalc.compute.device import _mainloop_time_s, core_efficiency_from_mamf
from distcalc.model import load_model

A100 = load_device("a100-80gb")


@pytest.mark.parametrize("name,layers,hidden", [("gpt3-175b", 96, 12288), ("megatron-530b", 105, 20480)])
def test_model_flops_equal_korthikanti_appendix_a(name, layers, hidden):
    dims = model_dims(load_model(name))
    B, s, V = 64, 2048, 51200
    expected = 72 * B * layers * s * hidden**2 * (1 + s / (6 * hidden) + V / (12 * hidden * layers))
    assert float(model_flops_per_step(dims, B, s)) == pytest.approx(expected, rel=1e-3)
    hfu = 72 * B * layers * s * hidden**2 * (1 + s / (3 * hidden) + V / (12 * hidden * layers))
    assert float(hardware_flops_per_step(dims, B, s, 1)) == pytest.approx(hfu, rel=1e-3)


def test_full_recompute_hardware_flops_are_four_thirds_of_layers():
    dims = model_dims(load_model("gpt3-175b"))
    model = float(model_flops_per_step(dims, 8, 2048))
    logits = 3 * 8 * 2048 * 2 * dims.hidden * dims.vocab
    assert float(hardware_flops_per_step(dims, 8, 2048, 2)) == pytest.approx(model + (model - logits) / 3, rel=1e-9)


def test_core_efficiency_reproduces_mamf_at_its_shape():
    m, n, k = 6912, 16384, 2048
    achieved = float(gemm_efficiency(1, m, n, k, A100)) * A100.peak_flops_per_s
    assert achieved == pytest.approx(267.9e12, rel=0.01)
    assert 0 < A100.gemm_core_efficiency <= 1


def test_small_gemms_are_far_from_peak():
    assert float(gemm_efficiency(1, 64, 64, 64, A100)) < 0.05
    assert float(gemm_efficiency(1, 8192, 8192, 8192, A100)) > 0.75


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 16384), n=st.integers(1, 16384), k=st.integers(1, 16384))
def test_gemm_efficiency_bounded_and_time_above_roofline(m, n, k):
    eff = float(gemm_efficiency(1, m, n, k, A100))
    assert 0 < eff <= 1
    t = float(gemm_time_s(1, m, n, k, A100))
    assert t >= 2.0 * m * n * k / A100.peak_flops_per_s
    assert t >= 2.0 * (m * k + k * n + m * n) / A100.hbm_bandwidth_bytes_per_s


def test_wave_quantisation_one_extra_tile_costs_a_wave():
    # 108 SMs; 256x128 tiles: 12 x 9 = 108 tiles = 1 wave, one more row of tiles -> 2 waves
    full = float(gemm_time_s(1, 256 * 12, 128 * 9, 8192, A100))
    over = float(gemm_time_s(1, 256 * 12 + 1, 128 * 9, 8192, A100))
    assert over > 1.5 * full


def test_layer_times_recompute_and_sequence_parallel():
    dims = model_dims(load_model("megatron-22b"))
    base = layer_times(dims, A100, 4, 2048, 8, 1, 0, 0, 0)
    full = layer_times(dims, A100, 4, 2048, 8, 1, 0, 2, 0)
    sel = layer_times(dims, A100, 4, 2048, 8, 1, 0, 1, 0)
    sp = layer_times(dims, A100, 4, 2048, 8, 1, 1, 0, 0)
    assert float(full.recompute_s) == pytest.approx(float(base.forward_s))
    assert 0 < float(sel.recompute_s) < 0.3 * float(base.forward_s)
    assert float(sp.forward_s) < float(base.forward_s)  # SP shards the residual-stream elementwise work
    flash = layer_times(dims, A100, 4, 2048, 8, 1, 0, 1, 1)
    assert float(flash.recompute_s) == 0.0


def test_layer_times_vectorised_equal_scalar():
    dims = model_dims(load_model("llama3-8b"))
    tp = np.array([1, 2, 4, 8])
    vec = layer_times(dims, A100, 2, 4096, tp, 1, 1, 1, 1)
    for i, t in enumerate(tp):
        one = layer_times(dims, A100, 2, 4096, int(t), 1, 1, 1, 1)
        assert float(one.total_s()) == pytest.approx(float(vec.total_s()[i]))


@pytest.mark.parametrize("gpu", ["a100-40gb", "a100-80gb", "h100-sxm", "h200", "b200", "tpu-v5p"])
def test_every_gpu_preset_has_a_compute_model(gpu):
    device = load_device(gpu)
    assert 0.5 < device.gemm_core_efficiency <= 1.0
    assert core_efficiency_from_mamf(device.peak_flops_per_s * 0.8, (8192, 8192, 8192), device.peak_flops_per_s,
                                     device.hbm_bandwidth_bytes_per_s, device.memory_efficiency, device.sm_count,
                                     device.l2_bandwidth_bytes_per_s) > 0.8


H100 = load_device("h100-sxm")
H100_FP8 = load_device("h100-sxm", "fp8")
H100_MAMF_BF16 = 792.1e12  # presets/compute.yaml (Bekman, ml-engineering MAMF table)


@settings(max_examples=80, deadline=None)
@given(m=st.integers(1, 32768), n=st.integers(1, 32768), k=st.integers(1, 65536))
def test_no_h100_gemm_beats_its_power_limited_throughput(m, n, k):
    """The measured sustained rate under the 700 W cap bounds every shape, BF16 and FP8."""
    for device in (H100, H100_FP8):
        achieved = float(gemm_efficiency(1, m, n, k, device)) * device.peak_flops_per_s
        assert achieved <= device.power_limited_flops_per_s * (1 + 1e-9)


def test_h100_uncapped_reproduces_mamf_and_the_cap_sets_sustained_throughput():
    m, n, k = 6144, 2816, 17920  # the MAMF best shape as relabelled M x N x K (ml-engineering 59fc831)
    burst = dataclasses.replace(H100, power_limited_flops_per_s=float("inf"))
    # (4 us of kernel overhead on a 0.78 ms GEMM is the 0.5 % left)
    assert float(gemm_efficiency(1, m, n, k, burst)) * H100.peak_flops_per_s == pytest.approx(H100_MAMF_BF16, rel=0.01)
    # measured here: 8192^3 runs at 677 TFLOP/s sustained (1.632 ms) and 773 from an idle GPU
    assert float(gemm_time_s(1, 8192, 8192, 8192, H100)) == pytest.approx(2 * 8192**3 / 677e12, rel=0.01)
    # uncapped, 8192^3 runs at the burst rate measured from an idle GPU (773.1 TFLOP/s, the H100 JSON's
    # "burst"; held out: η_core comes from the MAMF alone); the cap binds there, as measured
    assert 2 * 8192**3 / float(gemm_time_s(1, 8192, 8192, 8192, burst)) == pytest.approx(773.1e12, rel=0.02)
    assert float(gemm_time_s(1, 8192, 8192, 8192, burst)) < 0.9 * float(gemm_time_s(1, 8192, 8192, 8192, H100))
    assert not H100.epilogue_overlapped and not A100.epilogue_overlapped
    assert A100.power_limited_flops_per_s == float("inf")  # not measured: no cap


@pytest.mark.parametrize("gpu", ["h100-sxm", "a100-80gb"])
def test_short_k_gemms_pay_a_serial_epilogue(gpu):
    """Measured on H100: 8192x8192x256 BF16 at 384 TFLOP/s, 8192x8192x1024 at 682 (the serial epilogue
    predicts 456 and 670; an overlapped one 566 and 767)."""
    device = load_device(gpu)
    assert float(gemm_efficiency(1, 8192, 8192, 256, device)) < 0.8 * float(gemm_efficiency(1, 8192, 8192, 8192, device))


@pytest.mark.parametrize("shape", [(8192, 8192, 8192), (4096, 14336, 8192), (16384, 4096, 4096)])
def test_fp8_large_gemms_run_at_the_measured_fp8_to_bf16_power_limited_ratio(shape):
    """FP8 doubles the tensor-core rate and halves the operand bytes, so a tile is exactly as L2-bound as in BF16
    and the main loop takes half the time (the serial epilogue writes the same 16-bit C); GPU-filling GEMMs are power-limited, so the ratio is the
    measured sustained ratio 677/1218."""
    bf16, fp8 = (float(_mainloop_time_s(1, *shape, d.sm_count, d.peak_flops_per_s, d.l2_bandwidth_bytes_per_s,
                                        d.operand_bytes)) for d in (H100, H100_FP8))
    assert fp8 == pytest.approx(bf16 / 2, rel=1e-3)
    assert float(gemm_time_s(1, *shape, H100_FP8)) / float(gemm_time_s(1, *shape, H100)) == pytest.approx(
        677 / 1218, rel=0.02)
    assert H100_FP8.operand_bytes == 1 and H100.operand_bytes == 2


def test_fp8_layer_pays_transformer_engine_cast_transpose():
    """Under FP8 every layer GEMM's input (forward) and output gradient (backward) is cast and transposed:
    4 bytes per element over the device's memory bandwidth, one kernel each; attention and the GEMM-free parts
    are unchanged, and the output layer stays in 16 bit."""
    from distcalc.compute.layer import head_times

    dims = model_dims(load_model("llama3-70b"))
    b, s, t, cp = 1, 8192, 4, 2
    bf16 = layer_times(dims, H100, b, s, t, cp, 1, 0, 1)
    fp8 = layer_times(dims, H100_FP8, b, s, t, cp, 1, 0, 1)
    tokens = b * s / cp
    widths_in = [dims.hidden, dims.heads * dims.v_head_dim / t, dims.hidden, dims.ffn / t]
    widths_out = [dims.qkv_width / t, dims.hidden, 2 * dims.ffn / t, dims.hidden]
    bw, launch = H100.memory_bandwidth_bytes_per_s, 4 * H100.kernel_overhead_s
    assert float(fp8.forward_elementwise_s - bf16.forward_elementwise_s) == pytest.approx(
        4 * tokens * sum(widths_in) / bw + launch, rel=1e-9)
    assert float(fp8.forward_attention_s) == pytest.approx(float(bf16.forward_attention_s), rel=1e-12)
    assert float(fp8.forward_gemm_s) < 0.6 * float(bf16.forward_gemm_s)  # power-limited ratio 677/1218
    assert head_times(dims, H100_FP8, b, s, t, cp, 1) == head_times(dims, H100, b, s, t, cp, 1)
