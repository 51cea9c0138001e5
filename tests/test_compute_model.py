"""Compute model: FLOP formulas (Korthikanti App. A), GEMM efficiency physics, layer times."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.compute import (gemm_efficiency, gemm_time_s, hardware_flops_per_step, layer_times, load_device,
                              model_dims, model_flops_per_step)
from distcalc.compute.device import core_efficiency_from_mamf
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
