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


def test_fp8_rows_within_tolerance_and_bf16_miss_is_reported():
    cases = CASE_SETS["nemo-llama31-70b-h100"]()
    assert len(cases) == 12
    assert all(c.passed for c in cases if " fp8 " in c.case)
    # Known miss, stated in README: with NeMo's userbuffer TP overlap counted as free, BF16 is ~11 % fast.
    bf16 = [c.error for c in cases if " bf16 " in c.case]
    assert all(-0.12 < e < -0.06 for e in bf16), bf16
