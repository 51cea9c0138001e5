"""GPU-to-GPU speed variation and the synchronous job's wait for its slowest GPU.

GPUs of one SKU do not run equally fast: power management and manufacturing spread make some sustain
lower clocks than others under the same load, persistently (Sinha et al. 2022, "Not All GPUs Are Created
Equal: Characterizing Variability in Large-Scale, Accelerator-Rich Systems", SC22, arXiv:2208.11035:
8 % average performance variation across the GPUs of a cluster, outliers excluded, over four clusters and
several compute-bound applications incl. SGEMM; Golden et al. 2025, "PRISM", arXiv:2510.15596: up to 14 %
GEMM performance variation at scale).

A training step with TP, PP and DP synchronises all its GPUs: a TP group runs each layer at the pace of
its slowest member (its collectives wait), the pipeline's steady state at the pace of its slowest stage,
and the step ends when the slowest data-parallel replica is done. So the step's compute runs at the speed
of the slowest of the N GPUs. Symbols: per-GPU compute time ``t_i = t·(1 + σ·Z_i)``, ``Z_i`` iid standard
normal, σ the coefficient of variation of GPU speed; the job's compute time is ``t·(1 + σ·E[max_i Z_i])``.

``E[max of n standard normals] = ∫ x · n·φ(x)·Φ(x)^(n−1) dx`` (order statistics; David & Nagaraja,
"Order Statistics", 3rd ed. 2003, §3.2), evaluated numerically: 0 for n = 1, 1/√π for n = 2, ≈ 1.54 for
n = 10, ≈ 2.51 for n = 100, ≈ 3.24 for n = 1000.

Default σ: Sinha et al.'s "variation" is the spread between the slowest and fastest non-outlier GPU
(box-plot whiskers, 1.5 × IQR) relative to the median. For a normal distribution sampled by hundreds of
GPUs the whiskers sit at ±2.70σ, so 8 % ⇒ σ = 0.08 / 5.40 ≈ 1.48 % (:data:`DEFAULT_GPU_SPEED_CV`, defined in
:mod:`distcalc.gpu_speed_cv`).
Assumptions, stated: speed is normal and independent across GPUs; the single-GPU efficiency the compute
model starts from (MAMF of one GPU) is that of a median GPU; communication is not slowed.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np

from distcalc.gpu_speed_cv import DEFAULT_GPU_SPEED_CV  # noqa: F401 (re-exported)


@lru_cache(maxsize=1)
def _normal_grid() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The integration grid on [-12, 12] with the standard normal density and log CDF on it (built on first
    use, not at import: 24,001 ``erfc`` calls, on Python floats: the same arguments as dividing element by
    element, a tenth of the time of calling ``erfc`` on numpy scalars)."""
    grid = np.linspace(-12.0, 12.0, 24001)
    pdf = np.exp(-0.5 * grid * grid) / math.sqrt(2.0 * math.pi)
    erfc = np.array(list(map(math.erfc, (-grid / math.sqrt(2.0)).tolist())))
    log_cdf = np.log(np.maximum(0.5 * erfc, 1e-300))
    return grid, pdf, log_cdf


@lru_cache(maxsize=4096)
def expected_max_standard_normal(n: int) -> float:
    """E[max of n iid standard normal variables] (0 for n ≤ 1), by the trapezoid rule on a fine grid
    (absolute error < 1e-6 for n ≤ 10⁷)."""
    if n <= 1:
        return 0.0
    grid, pdf, log_cdf = _normal_grid()
    density = n * pdf * np.exp((n - 1) * log_cdf)
    return float(np.trapezoid(grid * density, grid))


def slowest_gpu_factor(gpus: Any, speed_cv: float) -> Any:
    """``1 + σ·E[max of N standard normals]``: expected compute time of a job synchronised over ``gpus``
    GPUs relative to one median GPU (elementwise over an integer array; 1 where σ = 0 or N = 1)."""
    n = np.asarray(gpus, dtype=np.int64)
    if speed_cv == 0.0:
        return np.ones(n.shape)
    if n.size == 1:  # one configuration: no table to build
        return 1.0 + speed_cv * np.full(n.shape, expected_max_standard_normal(int(n.flat[0])))
    values, inverse = np.unique(n, return_inverse=True)
    table = np.array([expected_max_standard_normal(int(v)) for v in values])
    return 1.0 + speed_cv * table[inverse].reshape(n.shape)
