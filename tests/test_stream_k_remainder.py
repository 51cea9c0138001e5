"""Stream-K remainder of a GEMM grid's partial last wave (distcalc.compute.device) and the MAMF best shapes
read as M x N x K."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.compute.device import _mainloop_time_s, compute_preset_entry, gemm_time_s, load_device

H100 = load_device("h100-sxm", "bf16")


def test_partial_wave_costs_its_fraction_on_hopper_and_a_whole_wave_elsewhere() -> None:
    # 4096 x 1280 x 8192: 160 tiles of 256x128 on 132 SMs = 1.21 waves
    args = (1, 4096, 1280, 8192, 132, H100.peak_flops_per_s, H100.l2_bandwidth_bytes_per_s)
    whole = _mainloop_time_s(*args)
    split = _mainloop_time_s(*args, stream_k=True)
    assert float(split) == pytest.approx(float(whole) * (160 / 132) / 2, rel=1e-12)
    assert load_device("h100-sxm").stream_k_remainder and load_device("h200").stream_k_remainder
    assert not load_device("a100-80gb").stream_k_remainder and not load_device("b200").stream_k_remainder


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 20000), n=st.integers(1, 20000), k=st.integers(1, 20000))
def test_stream_k_never_slower_than_whole_waves(m: int, n: int, k: int) -> None:
    whole = dataclasses.replace(H100, stream_k_remainder=False)
    split_s, whole_s = float(gemm_time_s(1, m, n, k, H100)), float(gemm_time_s(1, m, n, k, whole))
    assert 0 < split_s <= whole_s * (1 + 1e-12)
    # a grid of whole waves costs the same either way: 1024 x 8448 is 264 tiles of 256x128 (or 128x256),
    # two waves of 132
    assert float(gemm_time_s(1, 1024, 8448, 4096, H100)) == pytest.approx(float(gemm_time_s(1, 1024, 8448, 4096, whole)))


def test_mamf_shapes_are_read_m_n_k() -> None:
    """ml-engineering 59fc831 (2025-01-04) relabelled the v1 MAMF table: H100 SXM 792.1 TFLOP/s at
    6144x2816x17920 (k the last); the H200 preset's 794.5 is the current table's entry at 2048x2048x13312."""
    for name in ("h100-sxm", "h800", "h100-pcie", "h100-nvl"):
        assert compute_preset_entry(name)["mamf_shape"] == [6144, 2816, 17920]
    assert compute_preset_entry("h200")["mamf_shape"] == [2048, 2048, 13312]
    h200 = dataclasses.replace(load_device("h200"), power_limited_flops_per_s=float("inf"))
    m, n, k = 2048, 2048, 13312
    # 4 us of kernel overhead on the 0.14 ms MAMF GEMM is the 2.8 % left
    assert 2 * m * n * k / float(gemm_time_s(1, m, n, k, h200)) == pytest.approx(794.5e12, rel=0.035)
