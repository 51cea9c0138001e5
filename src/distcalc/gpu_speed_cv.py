"""The default spread of GPU compute speed across the GPUs of one SKU, σ (coefficient of variation).

Sinha et al. 2022 ("Not All GPUs Are Created Equal: Characterizing Variability in Large-Scale,
Accelerator-Rich Systems", SC22, arXiv:2208.11035) measured 8 % performance variation across the GPUs of a
cluster, outliers excluded: the spread between the slowest and fastest non-outlier GPU (box-plot whiskers,
1.5 × IQR) relative to the median. For a normal distribution sampled by hundreds of GPUs the whiskers sit at
±2.70σ, so 8 % ⇒ σ = 0.08 / 5.40 ≈ 1.48 %. :mod:`distcalc.variability` turns σ into the wait for the slowest
GPU. This module holds the default alone (no NumPy), for the command line's option defaults.
"""

from __future__ import annotations

#: σ of per-GPU compute speed, from Sinha et al. 2022's 8 % whisker-to-whisker spread (see module docstring).
DEFAULT_GPU_SPEED_CV = 0.08 / (2 * 2.698)
