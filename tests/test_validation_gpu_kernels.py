"""Kernel times measured on an H100 and an H200 (``gpu-kernels``) against the compute model."""

import numpy as np
import pytest

from distcalc.compute.device import load_device
from distcalc.validation import CASE_SETS
from distcalc.validation.gpu_kernels import gemm_layer_errors

CASES = {c.case: c for c in CASE_SETS["gpu-kernels"]()}


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200"])
@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_layer_gemms_mean_error_within_five_percent(gpu, dtype):
    """96 GEMMs of a Llama-3-70B layer per GPU and dtype; the power cap was set from one 8192^3 shape."""
    errors = gemm_layer_errors()[gpu, dtype]
    assert len(errors) == 96
    assert abs(errors.mean()) <= 0.05 and np.abs(errors).mean() <= 0.06


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200"])
def test_gpu_filling_gemms_within_fifteen_percent(gpu):
    for size in (8192, 16384):
        for dtype in ("bf16", "fp8"):
            case = CASES[f"{gpu} {dtype} GEMM {size}x{size}x{size} (square)"]
            assert case.passed, (case.case, case.error)


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200"])
def test_fused_attention_long_and_context_parallel_blocks_within_twenty_percent(gpu):
    """cuDNN attention (TransformerEngine's Hopper backend): causal s = 8192 and the non-causal blocks of a
    context-parallel ring step agree with the constant-efficiency model."""
    picked = [c for name, c in CASES.items() if name.startswith(f"{gpu} attention")
              and ("8192x8192" in name or " full " in name)]
    assert len(picked) == 12
    assert all(c.passed for c in picked), [(c.case, c.error) for c in picked if not c.passed]


def test_short_causal_attention_forward_pays_its_block_tail_backward_is_a_known_fast_miss():
    """Causal s = 2048: the forward, with its thread-block tail (compute.attention.causal_forward_tail), is
    within 20 % (was 37-55 % too fast); the backward still runs 40-63 % slower than the model says (the tail
    is not applied there: REFERENCES, "GEMM and attention kernels against distcalc's H100/H200
    measurements"): reported, not hidden."""
    short = {name: c for name, c in CASES.items() if "2048x2048 causal" in name}
    assert len(short) == 8
    assert all(c.passed for name, c in short.items() if "forward" in name)
    assert all(c.error < -0.3 for name, c in short.items() if "backward" in name)


def test_host_paced_gemms_are_not_cases_and_swiglu_is_priced_eager():
    """GEMMs timed at PyTorch's per-call dispatch floor (the sub-2048 squares of the same call) measure the
    host: H100 FP8 2048^3 ran slower than BF16 2048^3 (31.4 vs 25.0 us), at the FP8 floor (31.7 us)."""
    from distcalc.validation.base import read_validation_csv
    from distcalc.validation.gpu_kernels import CSV, host_floor_s, host_paced

    rows = read_validation_csv(CSV)
    floor = host_floor_s(rows)
    assert floor["h100-sxm", "fp8"] == pytest.approx(31.7e-6, rel=0.01)
    paced = {(r["gpu"], r["dtype"], r["m"], r["n"], r["k"]) for r in rows
             if host_paced(r, floor) and not (r["set"] == "square" and int(r["m"]) < 2048)}
    assert paced == {("h100-sxm", "fp8", "2048", "2048", "2048"), ("h100-sxm", "fp8", "128", "8192", "8192"),
                     ("h200", "fp8", "2048", "2048", "2048")}
    assert "h100-sxm fp8 GEMM 2048x2048x2048 (square)" not in CASES
    assert "h100-sxm bf16 GEMM 2048x2048x2048 (square)" in CASES
    # eager SwiGLU: 10 B per element over two kernels (the model's own count), not the fused 6 B
    swiglu = CASES["h100-sxm swiglu-fwd (352321536 B)"]
    h100 = load_device("h100-sxm")
    elements = 352321536 / 6
    assert swiglu.predicted == pytest.approx((10 * elements / h100.memory_bandwidth_bytes_per_s
                                              + 2 * h100.kernel_overhead_s) * 1e6)
