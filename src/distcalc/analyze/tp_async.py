"""Backward TP collectives launched asynchronously beside a GEMM through NCCL (no userbuffers).

Megatron-LM's ``LinearWithGradAccumulationAndAsyncCommunication`` (asynchronous TP all-reduce since
cf7efd4f5a, 2021-08-30, on by default; with sequence parallelism since 9aad9203aa, 2022-05-20) and
TransformerEngine's ``Linear`` / ``LayerNormLinear`` backward launch the column-parallel layers' backward
collectives with ``async_op=True`` and run a GEMM of the same layer while they are in flight: without
sequence parallelism the AllReduce of the input gradient beside the weight-gradient GEMM; with it the
re-gather of the sequence-sharded input beside the input-gradient GEMM and the ReduceScatter of the input
gradient beside the weight-gradient GEMM (the ``overlappable`` messages of
:func:`distcalc.traffic.tp_layer_messages`). The two kernels share the GPU: NCCL's channels take SMs and both
stream HBM, so the GEMM runs slower while the collective is in flight.

How much of the collective's time that removes from the critical path is taken from Lee et al. 2025
("Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning", arXiv:2507.03114,
abstract; GPT/Llama training on A100, H100, MI250, MI210), which gives two averages over its overlapped
workloads: compute runs ``κ`` = 18.9 % slower while a collective runs beside it, and running compute and
communication one after the other takes ``r`` = 1.102 × the overlapped time. With the collective hidden
inside the slowed compute (overlapped time ``(1 + κ)·C``, sequential ``C + M``), ``r·(1 + κ)·C = C + M``
gives ``M/C = r·(1 + κ) − 1`` (0.310) and the time overlap saves, ``(r − 1)·(1 + κ)·C``, is a fraction

    f = (r − 1)·(1 + κ) / (r·(1 + κ) − 1) = 0.391

of the collective's own time: 39 % of it is hidden, the other 61 % is paid as slower compute. A collective
longer than the GEMMs of its layer's backward pays the excess as well: exposed = c − min(f·c, window).

Checked against measurements this constant was not taken from: Korthikanti et al. 2022 Table 4 (22B layer,
A100, 2022 Megatron-LM) — the backward with the collectives fully exposed is 6–7.5 % over the measured
time and would need 39 % (no SP) and 46 % (SP) of them hidden; FlagPerf's A800 Llama-3 8B rows (Megatron-Core
0.6 + TE, one model and GPU, TP 1–8) under-predict TP 1 by 7 % and over-predict TP 8 by 2.5 % when the
collectives are exposed (signed error = −8.4 % + 0.25 × the exposed TP share of the step); Narayanan et al.
2021 (the SC21 code, before the asynchronous all-reduce) shows no such trend (+0.08 × share).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.analyze.contention import OVERLAP_COMPUTE_SLOWDOWN

ArrayLike = Any

#: Lee et al. 2025 (arXiv:2507.03114), abstract: average compute slowdown while a collective overlaps it — the
#: one constant :mod:`distcalc.analyze.contention` holds for every overlapped collective
LEE2025_COMPUTE_SLOWDOWN = OVERLAP_COMPUTE_SLOWDOWN
#: Lee et al. 2025, abstract: sequential compute + communication is on average 10.2 % slower than overlapped
LEE2025_SEQUENTIAL_OVER_OVERLAPPED = 1.102


def hidden_fraction(compute_slowdown: float = LEE2025_COMPUTE_SLOWDOWN,
                    sequential_over_overlapped: float = LEE2025_SEQUENTIAL_OVER_OVERLAPPED) -> float:
    """Fraction of an overlapped collective's time that overlap removes from the critical path (module
    docstring): ``(r − 1)(1 + κ) / (r(1 + κ) − 1)``."""
    overlapped = 1.0 + compute_slowdown
    comm_over_compute = sequential_over_overlapped * overlapped - 1.0
    if comm_over_compute <= 0:
        raise ValueError(f"sequential/overlapped {sequential_over_overlapped} with slowdown {compute_slowdown} "
                         "leaves no communication time; valid: r·(1 + κ) > 1")
    return (sequential_over_overlapped - 1.0) * overlapped / comm_over_compute


#: f of the module docstring (0.391)
ASYNC_HIDDEN_FRACTION = hidden_fraction()


def async_exposed_s(overlappable_s: ArrayLike, window_s: ArrayLike,
                    fraction: float = ASYNC_HIDDEN_FRACTION) -> np.ndarray:
    """Critical-path seconds of the backward TP collectives that run asynchronously beside their layer's
    backward GEMMs (``window_s``): ``c − min(f·c, window)``."""
    c = np.asarray(overlappable_s, dtype=float)
    return c - np.minimum(fraction * c, np.asarray(window_s, dtype=float))
