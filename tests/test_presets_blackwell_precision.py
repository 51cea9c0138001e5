"""Blackwell / A800 presets and the per-precision GEMM model (fp8, mxfp8, nvfp4)."""

from __future__ import annotations

import pytest

from distcalc.analyze import analyze
from distcalc.cluster import load_cluster
from distcalc.compute import load_device
from distcalc.compute.device import compute_preset_entry, gemm_time_s
from distcalc.errors import ConfigError
from distcalc.hardware import load_gpu
from distcalc.memory import bytes_per_parameter
from distcalc.memory.states import Recipe
from distcalc.parallel import ParallelConfig, Precision


@pytest.mark.parametrize("gpu, bf16, fp8", [("gb200", 2.5e15, 5.0e15), ("gb300", 2.5e15, 5.0e15),
                                            ("b200", 2.25e15, 4.5e15), ("a800-80gb", 312e12, None)])
def test_dense_peaks_are_half_the_sparse_datasheet_figures(gpu, bf16, fp8):
    peaks = load_gpu(gpu).peak_flops_per_s
    assert peaks["bf16"] == bf16
    assert peaks.get("fp8") == fp8


def test_cluster_presets_name_their_gpu_and_links():
    assert load_cluster("gb200-nvl72").gpu == "gb200"
    assert load_cluster("gb300-nvl72").gpu == "gb300" and load_cluster("gb300-nvl72").inter.name == "ib-xdr"
    b200 = load_cluster("dgx-b200")
    assert (b200.gpu, b200.gpus_per_node, b200.intra.name, b200.inter.name) == ("b200", 8, "nvlink5", "ib-ndr")
    a800 = load_cluster("dgx-a800")
    assert a800.intra.bandwidth_bytes_per_s == 200e9  # 400 GB/s bidirectional NVLink cap
    assert load_cluster("dgx-a100").intra.bandwidth_bytes_per_s == 300e9


def test_b200_gemms_run_at_the_measured_sustained_rate():
    n = 8192
    for dtype, rate in (("bf16", 1.09e15), ("fp8", 2.14e15), ("mxfp8", 2.14e15)):
        device = load_device("b200", dtype)
        assert device.power_limited_flops_per_s == rate
        assert float(gemm_time_s(1, n, n, n, device)) >= 2.0 * n**3 / rate


def test_grace_blackwell_sustained_rates_follow_the_measured_mamf_not_the_board_power():
    """GB200 is B200's die at 1200 W instead of 1000 W; its measured MAMF is 1822.0 against B200's 1745.0 TFLOPS
    (x 1.044, ml-engineering MAMF table), so its sustained rate is B200's measured 1.09 PF x 1.044, not x 1200/1000.
    GB300's MAMF is the Blackwell Ultra die's (B300 SXM 1769.0) x the GB200/B200 ratio; its sustained rate stays
    the power-linear assumption (every B200-derived rate is below what its measured 405B run needs)."""
    b200 = load_device("b200", "bf16").power_limited_flops_per_s
    gb200 = load_device("gb200", "bf16").power_limited_flops_per_s
    assert gb200 == 1.14e15 and gb200 == pytest.approx(b200 * 1822.0 / 1745.0, rel=0.01)
    assert gb200 / b200 < 1200.0 / 1000.0 - 0.1  # not the board-power ratio
    assert [load_device("gb200", d).power_limited_flops_per_s for d in ("fp8", "mxfp8")] == [2.26e15, 2.26e15]
    assert load_device("gb300", "fp8").power_limited_flops_per_s == 2.90e15
    # the GB300 FP8 rate is above the GEMM rate Megatron-Bridge 25.11's GB300 405B run needs: 6 x 403.8e9 FLOPs
    # per token x 49152 tokens per GPU in 49.2 s
    assert load_device("gb300", "fp8").power_limited_flops_per_s > 6 * 403.8e9 * 49152 / 49.2012
    gb300_entry = compute_preset_entry("gb300")
    assert float(gb300_entry["mamf_bf16_flops_per_s"]) == pytest.approx(1769.0e12 * 1822.0 / 1745.0, rel=1e-3)
    assert gb300_entry["mamf_shape"] == [12288, 18432, 1024]


@pytest.mark.parametrize("gpu, mamf_fp8, mamf_bf16", [("b200", 3432.5, 1745.0), ("gb200", 3615.6, 1822.0),
                                                      ("gb300", 3353.3, 1769.0)])  # gb300: B300 SXM's MAMF
def test_blackwell_fp8_sustained_rate_is_bf16_times_the_measured_mamf_ratio(gpu, mamf_fp8, mamf_bf16):
    """ml-engineering MAMF table (FP8 float8_e4m3fn and BF16 rows): Blackwell's FP8/BF16 ratio is ~1.9-2.0,
    not H100's 1.77-1.80; the sustained FP8 and MXFP8 rates carry that ratio on the BF16 sustained rate."""
    bf16 = load_device(gpu, "bf16").power_limited_flops_per_s
    for dtype in ("fp8", "mxfp8"):
        assert load_device(gpu, dtype).power_limited_flops_per_s == pytest.approx(bf16 * mamf_fp8 / mamf_bf16,
                                                                                 rel=0.01)


@pytest.mark.parametrize("dtype, operand, quantize, cache", [
    ("bf16", 2.0, 0.0, 0.0), ("fp16", 2.0, 0.0, 0.0), ("fp8", 1.0, 4.0, 1.0),
    ("mxfp8", 1.03125, 2.0 + 2 * 1.03125, 2 * 1.03125), ("nvfp4", 0.5625, 2.0 + 2 * 0.5625, 2 * 0.5625)])
def test_precision_byte_counts(dtype, operand, quantize, cache):
    p = Precision(dtype)
    assert (p.operand_bytes, p.quantize_bytes_per_element, p.weight_cache_bytes_per_parameter) == \
        (operand, quantize, cache)
    assert bytes_per_parameter(Recipe.MIXED, p)["weights"] == 2.0 + cache


def test_block_scaled_formats_need_a_gpu_that_has_them():
    with pytest.raises(ConfigError, match="mxfp8"):
        load_device("h100-sxm", "mxfp8")
    assert load_device("b200", "nvfp4").peak_flops_per_s == 9.0e15


def test_mxfp8_costs_more_than_fp8_on_the_same_gpu():
    config = dict(gpus=8, tp=1, dp=8, micro_batch=1, global_batch=64, seq_len=8192, distributed_optimizer=True)
    fp8 = analyze("llama3-8b", "dgx-b200", ParallelConfig(dtype="fp8", **config))
    mxfp8 = analyze("llama3-8b", "dgx-b200", ParallelConfig(dtype="mxfp8", **config))
    bf16 = analyze("llama3-8b", "dgx-b200", ParallelConfig(dtype="bf16", **config))
    assert fp8.step_time_s < mxfp8.step_time_s < bf16.step_time_s
    assert mxfp8.memory["weights_bytes"] > fp8.memory["weights_bytes"]


def test_export_and_pcie_variants_keep_their_silicon_and_cite_their_links():
    h800 = load_cluster("dgx-h800")
    assert h800.gpu == "h800" and h800.intra.bandwidth_bytes_per_s == 200e9
    # same GH100 silicon and 700 W limit as H100 SXM: the same measured sustained rates
    assert load_device("h800", "bf16").power_limited_flops_per_s == load_device("h100-sxm").power_limited_flops_per_s
    assert load_gpu("h100-pcie").peak_flops_per_s["bf16"] == 756.5e12
    assert load_cluster("h100-pcie-node").intra.name == "pcie5"
    assert load_gpu("h100-nvl").memory_bytes == 94e9
