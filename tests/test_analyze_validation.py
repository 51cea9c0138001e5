"""Korthikanti et al. 2022 measurements (one dgx-a100 preset, no per-row constants): Table 5 iteration
times (mean |error| ≤ 3 %, worst ≤ 6 %), present-work MFU within 2 points, Table 4 layer times within 10 %."""

import numpy as np
import pytest

from distcalc.validation import CASE_SETS
from distcalc.validation.end_to_end import KORTHIKANTI_OPTIONS, table4_results, table5_results

TABLE5 = table5_results()


def test_table5_mean_and_worst_error():
    errors = [abs(r["predicted_s"] - r["measured_s"]) / r["measured_s"] for r in TABLE5]
    assert len(errors) == 8
    assert np.mean(errors) <= 0.03, errors
    assert max(errors) <= 0.06, errors


@pytest.mark.parametrize("row", [r for r in TABLE5 if r["measured_mfu_pct"] is not None], ids=lambda r: r["model"])
def test_table5_present_work_mfu_within_two_points(row):
    assert abs(100 * row["mfu"] - row["measured_mfu_pct"]) <= 2.0


def test_slowest_gpu_wait_is_what_closes_the_530b_gap():
    """With identical GPUs (σ = 0) the 530B present-work run is predicted 4.4 % fast (MFU +2.6): the wait for
    the slowest of 280 GPUs (σ from Sinha et al. 2022, not from these runs) is the term that closes it."""
    ideal = {(r["model"], r["mode"]): r
             for r in table5_results(KORTHIKANTI_OPTIONS.model_copy(update={"gpu_speed_cv": 0.0}))}
    row = ideal[("530B (MT-NLG)", "seqsel")]
    assert 100 * row["mfu"] - row["measured_mfu_pct"] > 2.0
    for r in TABLE5:  # the wait only ever adds time, more for more GPUs
        assert r["predicted_s"] > ideal[(r["model"], r["mode"])]["predicted_s"]


def test_table5_hfu_ratio_follows_appendix_a():
    for row in TABLE5:
        if row["measured_hfu_pct"] is not None:
            assert row["hfu"] / row["mfu"] == pytest.approx(row["measured_hfu_pct"] / row["measured_mfu_pct"], rel=0.01)


def test_table4_layer_times_within_ten_percent():
    for row in table4_results():
        for part in ("forward", "backward"):
            predicted, measured = row[f"{part}_ms"], row[f"measured_{part}_ms"]
            assert abs(predicted - measured) / measured <= 0.10, (row["experiment"], part, predicted, measured)


def test_case_sets_registered_and_heldout_reported():
    for name in ("korthikanti-table5", "korthikanti-table4", "korthikanti-heldout"):
        assert name in CASE_SETS
    heldout = CASE_SETS["korthikanti-heldout"]()
    time_case = heldout[0]
    assert time_case.published == 39.15 and abs(time_case.error) <= 0.06
    mfu_case = heldout[1]
    assert abs(mfu_case.predicted - mfu_case.published) <= 3.0
    assert len(heldout) == 5 and all(case.passed for case in heldout), [(c.case, c.error) for c in heldout]
