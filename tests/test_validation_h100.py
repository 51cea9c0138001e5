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


def test_every_run_within_six_percent_once_gemms_are_power_limited():
    """With the H100's measured sustained GEMM rates (677 TFLOP/s BF16, 1218 FP8 under the 700 W cap, not
    fitted to these rows) BF16 lands 1.2-1.9 % fast and FP8 2.6-5.2 % fast; before, from the burst MAMF,
    they were ~12 % and ~18 % fast. The model's FP8 gain is 1.37x against 1.34x measured."""
    cases = CASE_SETS["nemo-llama31-70b-h100"]()
    assert len(cases) == 12
    assert all(c.passed for c in cases), [(c.case, c.error) for c in cases]
    # within 6 % fast and 3 % slow: with the cross-entropy counted op by op and the whole gradient buffer
    # zeroed each step, BF16 lands -0.3 … +0.4 %, FP8 -0.5 … -3.2 % (was -0.2 … -0.8 % and -1.3 … -3.9 %);
    # with η_core solved from the MAMF shape read as M x N x K and the stream-K remainder of partial waves
    # (compute.device), BF16 +1.9 … +2.5 %, FP8 -0.8 … +1.9 %
    assert all(-0.06 < c.error < 0.03 for c in cases)
    rows = {(r["dtype"], r["gpus"]): r for r in RESULTS}
    predicted_gain = rows["bf16", 64]["predicted_s"] / rows["fp8", 64]["predicted_s"]
    measured_gain = rows["bf16", 64]["measured_s"] / rows["fp8", 64]["measured_s"]
    assert predicted_gain == pytest.approx(measured_gain, rel=0.04), (predicted_gain, measured_gain)


def test_fp8_attention_runs_in_16_bit():
    """TransformerEngine keeps dot-product attention in BF16 under FP8 GEMMs (fp8_dot_product_attention off)."""
    from distcalc.compute import load_device

    fp8, bf16 = load_device("h100-sxm", "fp8"), load_device("h100-sxm", "bf16")
    assert fp8.peak_flops_per_s == pytest.approx(2 * bf16.peak_flops_per_s, rel=1e-3)
    assert fp8.attention == bf16 and bf16.attention is None
