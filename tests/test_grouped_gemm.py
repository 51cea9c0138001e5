"""MoE expert grouped GEMMs (distcalc.compute.grouped) against grouped-GEMM efficiencies measured on B200."""

import csv
from pathlib import Path

import numpy as np
import pytest

from distcalc.compute import load_device
from distcalc.compute.device import gemm_time_s
from distcalc.compute.grouped import expert_gemm_times, grouped_gemm_time_s

DATA = Path(__file__).parent / "data" / "simumax_b200_grouped_gemm.csv"


def _rows():
    with DATA.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _efficiency(t, groups, m, n, k, peak):
    return 2.0 * groups * m * n * k / (t * peak)


def test_measured_b200_grouped_gemms():
    """Golden: 28 measured forward / input-gradient grouped GEMMs; the weight stream model lands within
    20 % mean |error| and ±8 % mean signed error (the dense batched-GEMM model is > 50 % too fast)."""
    device = load_device("b200", "bf16")
    errors, dense_errors = [], []
    for row in _rows():
        g, m, n, k = (int(row[c]) for c in ("groups", "m", "n", "k"))
        if row["pass"] == "dgrad":
            m, n, k = m, k, n
        t = grouped_gemm_time_s(g, m, n, k, device, int(row["n"]) * int(row["k"]))
        measured = float(row["efficiency"])
        errors.append(_efficiency(t, g, m, n, k, 2250e12) / measured - 1)
        dense_errors.append(_efficiency(gemm_time_s(g, m, n, k, device), g, m, n, k, 2250e12) / measured - 1)
    errors = np.array(errors)
    assert len(errors) == 28
    assert np.abs(errors).mean() < 0.20
    assert abs(errors.mean()) < 0.08
    assert np.mean(dense_errors) > 0.5


def test_weight_gradient_keeps_the_dense_model_and_empty_is_free():
    device = load_device("h100-sxm", "bf16")
    fwd, dgrad, wgrad = expert_gemm_times(8, 1024, 2048, 4096, device, 8.0)
    assert wgrad == pytest.approx(gemm_time_s(8, 4096, 2048, 1024, device, out_bytes=8.0))
    assert fwd > gemm_time_s(8, 1024, 2048, 4096, device) and dgrad > 0
    assert grouped_gemm_time_s(8, 0, 2048, 4096, device, 2048 * 4096) == 0.0


def test_fewer_tokens_per_expert_lower_efficiency():
    """Same total work split over more experts (less reuse of each expert's weights) is slower."""
    device = load_device("b200", "bf16")
    few = grouped_gemm_time_s(20, 1232, 3072, 5120, device, 3072 * 5120)
    many = grouped_gemm_time_s(160, 154, 3072, 5120, device, 3072 * 5120)
    assert many > few
