"""NeMo 24.09 Llama 3.1 70B on DGX H100 (added after the model was built): what holds and what does not."""

import pytest

from distcalc.validation import CASE_SETS
from distcalc.validation.h100_runs import nemo_results

RESULTS = nemo_results()


@pytest.mark.parametrize("dtype", ["bf16", "fp8"])
def test_weak_scaling_trend_from_64_to_2048_gpus(dtype):
    """Same per-GPU work from 64 to 2048 GPUs: the step grows by 1.8 % (BF16) and 3.5 % (FP8) in the
    measurements (the slowest-GPU wait and the larger DP group); the model's growth is within 1.5 points."""
    rows = {r["gpus"]: r for r in RESULTS if r["dtype"] == dtype}
    measured = rows[2048]["measured_s"] / rows[64]["measured_s"] - 1
    predicted = rows[2048]["predicted_s"] / rows[64]["predicted_s"] - 1
    assert predicted > 0
    assert abs(predicted - measured) <= 0.015, (predicted, measured)


def test_known_misses_are_reported_as_they_are():
    """Stated in README: BF16 ~12 % fast, FP8 ~18 % fast; the model gains 1.43x from FP8, the runs 1.34x (before
    FP8 operands were priced at 1 byte in the GEMM tile model it gained 1.08x and FP8 came out 10 % slow)."""
    cases = CASE_SETS["nemo-llama31-70b-h100"]()
    assert len(cases) == 12
    bf16 = [c.error for c in cases if " bf16 " in c.case]
    fp8 = [c.error for c in cases if " fp8 " in c.case]
    assert all(-0.14 < e < -0.10 for e in bf16), bf16
    assert all(-0.21 < e < -0.15 for e in fp8), fp8
    rows = {(r["dtype"], r["gpus"]): r for r in RESULTS}
    predicted_gain = rows["bf16", 64]["predicted_s"] / rows["fp8", 64]["predicted_s"]
    measured_gain = rows["bf16", 64]["measured_s"] / rows["fp8", 64]["measured_s"]
    assert 1.3 < measured_gain < predicted_gain < 1.5, (predicted_gain, measured_gain)


def test_fp8_attention_runs_in_16_bit():
    """TransformerEngine keeps dot-product attention in BF16 under FP8 GEMMs (fp8_dot_product_attention off)."""
    from distcalc.compute import load_device

    fp8, bf16 = load_device("h100-sxm", "fp8"), load_device("h100-sxm", "bf16")
    assert fp8.peak_flops_per_s == pytest.approx(2 * bf16.peak_flops_per_s, rel=1e-3)
    assert fp8.attention == bf16 and bf16.attention is None
