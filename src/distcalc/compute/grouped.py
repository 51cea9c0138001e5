"""MoE expert GEMMs: one grouped GEMM over the local experts, each expert with its own weights.

A grouped GEMM (TransformerEngine ``GroupedLinear``, cuBLASLt / CUTLASS grouped kernels) runs ``G``
independent GEMMs ``[M×K]·[K×N]``, one per local expert, with ``M`` = the tokens routed to that expert
(``T·k·ep/E`` on average). A dense GEMM reuses every weight tile across ``⌈M/tile⌉`` tile rows out of L2,
so its weight traffic hides under the math; an expert's weight tile serves only that expert's few tile
rows (``M`` is a few hundred to a few thousand tokens), so every expert's ``N·K`` weights stream from HBM
while its handful of CTAs compute, and the stream is not hidden. The forward and input-gradient passes
then take

    ``t = t_GEMM(G, M, N, K) + G·N·K·b / B_HBM``

(``t_GEMM``: :func:`distcalc.compute.device.gemm_time_s`; ``b`` operand bytes; ``B_HBM`` the device's
effective HBM bandwidth). The weight-gradient pass produces the weights instead (its output, accumulated
into fp32 ``main_grad``, is already the traffic :func:`gemm_time_s` charges), so it keeps ``t_GEMM``.

No constant is fitted: the formula is checked against the grouped-GEMM efficiencies measured on a DGX B200
(MooreThreads/SimuMax ``configs/system/b200_bf16_ceperm.json``, ``group_matmul``: 14 expert shapes from
G = 20 × M = 1232 to G = 256 × M = 128, forward and input gradient) in the tests: mean |error| 17 %, mean
signed +3 %, where treating the experts as a dense batched GEMM is 62 % too fast.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.compute.device import DeviceCompute, gemm_time_s

ArrayLike = Any


def grouped_gemm_time_s(groups: ArrayLike, m: ArrayLike, n: ArrayLike, k: ArrayLike, device: DeviceCompute,
                        weight_elements: ArrayLike) -> ArrayLike:
    """Seconds of a grouped GEMM of ``groups`` experts ``[m×k]·[k×n]`` whose per-expert weight has
    ``weight_elements`` elements streamed from HBM beside the math (module docstring)."""
    base = gemm_time_s(groups, m, n, k, device)
    stream = np.multiply(groups, weight_elements) * float(device.operand_bytes) / device.memory_bandwidth_bytes_per_s
    return np.where(np.asarray(base) > 0, base + stream, 0.0)


def expert_gemm_times(groups: ArrayLike, m: ArrayLike, n: ArrayLike, k: ArrayLike, device: DeviceCompute,
                      wgrad_out_bytes: float) -> tuple[ArrayLike, ArrayLike, ArrayLike]:
    """(forward, input-gradient, weight-gradient) seconds of one expert weight ``[k×n]`` applied to ``m``
    tokens per expert over ``groups`` local experts."""
    weights = np.multiply(n, k)
    forward = grouped_gemm_time_s(groups, m, n, k, device, weights)
    dgrad = grouped_gemm_time_s(groups, m, k, n, device, weights)
    wgrad = gemm_time_s(groups, k, n, m, device, out_bytes=wgrad_out_bytes)
    return forward, dgrad, wgrad
