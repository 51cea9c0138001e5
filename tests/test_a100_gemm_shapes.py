"""A100 GEMM shape dependence against a published cuBLAS measurement.

NVIDIA's "CUDA 11 Features Revealed" (2020) Figure 6 plots cuBLAS BF16 throughput on A100 for square
problems m = n = k from 256 to 8192 (``data/validation/nvidia2020_a100_square_gemm_tflops.csv``, read off the
plot, ±3 TFLOP/s). The model's η_core comes from the MAMF table, not from this figure, so the figure checks
what the tile, wave, epilogue and roofline terms make of the other shapes. The absolute level of the figure
(290 TFLOP/s at 8192³) is above what the same GPU sustains on random data (257 TFLOP/s, Horace He 2024; MAMF
267.9–271.2), so the shape test compares throughput relative to 8192³.

Below 4096 the model departs from the figure by −14 … +20 points, in both directions (e.g. 2048³: 0.55 of the
8192³ rate against 0.68 measured — two waves of 256×128 tiles where cuBLAS runs something better; 1536³: 0.72
against 0.52): those sizes are not asserted. Layer GEMMs of the development rows have 1024–32768 rows (tokens)
and are not in that corner (their errors do not follow the model's GEMM rate: see REFERENCES.md).
"""

import numpy as np
import pytest

from distcalc.compute import gemm_time_s, load_device
from distcalc.validation.base import read_validation_csv

FIGURE = {int(row["size"]): float(row["tflops_bf16"])
          for row in read_validation_csv("nvidia2020_a100_square_gemm_tflops.csv")}
#: the published spread of A100 BF16 8192³ throughput: sustained on random data (Horace He 2024, 400 W) to
#: NVIDIA's Figure 6, with the figure's reading uncertainty
SPREAD_TFLOPS = (257.0, 290.0 + 3.0)


def _model_tflops(n: int, gpu: str = "a100-80gb") -> float:
    return 2.0 * n**3 / float(gemm_time_s(1, n, n, n, load_device(gpu))) / 1e12


@pytest.mark.parametrize("gpu", ["a100-80gb", "a100-40gb", "a800-80gb"])
def test_square_gemm_shape_curve_follows_cublas_from_4096(gpu):
    """From 4096 to 8192 the relative throughput r(n)/r(8192) is within 5 points of the figure at every size
    and within 2 points on average (reading error ±1 point; now 0.96 mean, 3.5 worst at 4608)."""
    reference = _model_tflops(8192, gpu)
    sizes = [n for n in FIGURE if n >= 4096]
    deviations = np.array([_model_tflops(n, gpu) / reference - FIGURE[n] / FIGURE[8192] for n in sizes])
    assert np.max(np.abs(deviations)) <= 0.05, dict(zip(sizes, np.round(deviations, 3)))
    assert np.mean(np.abs(deviations)) <= 0.02


def test_square_gemm_level_within_published_spread():
    """The model's 8192³ rate (no power cap on A100: none is measured) lies within the published A100 range."""
    low, high = SPREAD_TFLOPS
    assert low <= _model_tflops(8192) <= high


def test_figure_rows_cover_the_plot():
    """The transcription holds every 256-step size from 1024 to 8192 and rises overall (a misread axis would
    not)."""
    assert sorted(FIGURE) == list(range(1024, 8192 + 1, 256))
    assert FIGURE[8192] > FIGURE[4096] > FIGURE[2048] > FIGURE[1024]
