"""Fit the compute model's GEMM time (:func:`distcalc.compute.device.gemm_time_s`) to a ``bench gemm`` sweep.

The model (see :mod:`distcalc.compute.device`) is, per GEMM ``[m×k]·[k×n]``,

    t = max( X/η_core + Y/η_mem ,  Z/η_mem ) + t_0

with ``X`` the fastest tile's main-loop time at η_core = 1 (tile and wave quantisation over ``sm_count``
units at peak ``P``), ``Y = C_bytes / B_mem`` the epilogue and ``Z = (A + B + C)_bytes / B_mem`` the
streaming floor, both at η_mem = 1. For a fixed assignment of each shape to the compute- or the
stream-bound branch the model is linear in ``(1/η_core, 1/η_mem, t_0)``, so the fit alternates: solve the
non-negative least-squares problem in relative error (all active sets of the three unknowns are tried),
re-assign each shape to the branch the solution makes binding, repeat until the assignment is stable.

The fit uses each shape's fastest trial (``best_time_s``): the model predicts an unloaded kernel, and its
η_core is anchored to the *maximum achievable* matmul FLOP/s (MAMF), which is a best-of-trials measure too;
on a shared machine the median of a small GEMM can be a scheduler quantum rather than the kernel.

Device constants: a GPU run uses its preset (``peak``, HBM bandwidth, SM count, L2 bandwidth); a CPU run
uses ``P`` = ``--peak-flops`` when given, else the best throughput measured in the sweep (η_core is then
relative to the best shape, and may exceed 1 because the best shape also pays the epilogue and overhead),
``B_mem`` = the copy bandwidth the sweep measured, ``sm_count`` = the threads torch used, and an unlimited L2
(tile efficiency ρ = 1). Caveat: the tile/wave terms describe GPU kernels (cuBLAS large tiles over SMs); on a
CPU they over-predict small GEMMs, so the CPU fit is a rough curve (its RMS error is reported).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

FITTED = ("gemm_core_efficiency", "memory_efficiency", "kernel_overhead_s")


def _element_bytes(dtype: str) -> int:
    return {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}.get(dtype, 4)


def _device_constants(rows: list[dict[str, Any]], config: dict[str, Any], hardware: dict[str, Any]) -> dict[str, Any]:
    gpu = config.get("gpu_preset")
    if gpu:
        from distcalc.compute import load_device

        device = load_device(gpu, config.get("model_dtype", "bf16"))
        return {"name": device.name, "peak_flops_per_s": device.peak_flops_per_s,
                "hbm_bandwidth_bytes_per_s": device.hbm_bandwidth_bytes_per_s, "sm_count": device.sm_count,
                "l2_bandwidth_bytes_per_s": device.l2_bandwidth_bytes_per_s}
    return {"name": str(hardware.get("gpu") or hardware.get("cpu") or "cpu"),
            "peak_flops_per_s": float(config.get("peak_flops_per_s")
                                      or max(r["flops"] / r.get("best_time_s", r["time_s"]) for r in rows)),
            "hbm_bandwidth_bytes_per_s": float(config.get("memory_bandwidth_bytes_per_s") or 1e10),
            "sm_count": int(config.get("threads") or 1), "l2_bandwidth_bytes_per_s": math.inf}


def _nnls_relative(design: np.ndarray, times: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """Minimise Σ((offset + design·x − t)/t)² with x ≥ 0 by trying every active set (3 unknowns: 8 sets)."""
    scaled, target = design / times[:, None], 1.0 - offset / times
    best, best_cost = np.zeros(design.shape[1]), math.inf
    for size in range(1, design.shape[1] + 1):
        for free in itertools.combinations(range(design.shape[1]), size):
            solution, *_ = np.linalg.lstsq(scaled[:, free], target, rcond=None)
            if np.any(solution < 0):
                continue
            x = np.zeros(design.shape[1])
            x[list(free)] = solution
            cost = float(np.sum((scaled @ x - target) ** 2))
            if cost < best_cost:
                best, best_cost = x, cost
    return best


def fit_gemm(rows: list[dict[str, Any]], config: dict[str, Any], hardware: dict[str, Any]) -> dict[str, Any]:
    """Fit η_core, η_mem and t₀ of :func:`~distcalc.compute.device.gemm_time_s` (module docstring)."""
    from distcalc.compute.device import DeviceCompute, gemm_time_s

    constants = _device_constants(rows, config, hardware)
    e = _element_bytes(config.get("dtype", "float32"))
    m, n, k = (np.array([r[key] for r in rows], dtype=float) for key in ("m", "n", "k"))
    times = np.array([r.get("best_time_s", r["time_s"]) for r in rows], dtype=float)
    bandwidth = constants["hbm_bandwidth_bytes_per_s"]
    # X: the model's own main-loop time at η_core = 1, read off gemm_time_s with the memory terms removed
    # (η_mem = ∞ makes the epilogue and the streaming floor 0) and no per-kernel overhead.
    probe = DeviceCompute(name="probe", peak_flops_per_s=constants["peak_flops_per_s"],
                          hbm_bandwidth_bytes_per_s=bandwidth, sm_count=constants["sm_count"],
                          l2_bandwidth_bytes_per_s=constants["l2_bandwidth_bytes_per_s"], gemm_core_efficiency=1.0,
                          memory_efficiency=math.inf, kernel_overhead_s=0.0, flash_forward_efficiency=0.0,
                          flash_backward_efficiency=0.0)
    x_main = np.asarray(gemm_time_s(1, m, n, k, probe, in_bytes=e, out_bytes=e), dtype=float)
    y_epilogue = m * n * e / bandwidth
    z_stream = (m * k + k * n + m * n) * e / bandwidth

    def device_for(solution: np.ndarray) -> Any:
        inv_core, inv_mem, overhead = solution
        parameters = {"gemm_core_efficiency": 1.0 / inv_core if inv_core > 0 else math.inf,
                      "memory_efficiency": 1.0 / inv_mem if inv_mem > 0 else math.inf,
                      "kernel_overhead_s": float(overhead)}
        return DeviceCompute(name=constants["name"], peak_flops_per_s=constants["peak_flops_per_s"],
                             hbm_bandwidth_bytes_per_s=bandwidth, sm_count=constants["sm_count"],
                             l2_bandwidth_bytes_per_s=constants["l2_bandwidth_bytes_per_s"],
                             flash_forward_efficiency=0.0, flash_backward_efficiency=0.0, **parameters), parameters

    def true_cost(solution: np.ndarray) -> float:
        predicted = np.asarray(gemm_time_s(1, m, n, k, device_for(solution)[0], in_bytes=e, out_bytes=e), dtype=float)
        return float(np.sum(((predicted - times) / times) ** 2))

    # The epilogue (∝ m·n) and the main loop (∝ m·n·k) are nearly collinear when k hardly varies, so the
    # alternation can settle in a poor branch assignment: start it from every shape compute-bound and from
    # every shape stream-bound, also try the pure compute model (no memory terms), and keep the solution
    # with the smallest error under the real (max) model.
    candidates = [_nnls_relative(np.column_stack([x_main, np.zeros_like(times), np.ones_like(times)]), times,
                                 np.zeros_like(times))]
    for start in (False, True):
        stream_bound = np.full(times.size, start)
        for _ in range(20):
            design = np.column_stack([np.where(stream_bound, 0.0, x_main),
                                      np.where(stream_bound, z_stream, y_epilogue), np.ones_like(times)])
            solution = _nnls_relative(design, times, np.zeros_like(times))
            candidates.append(solution)
            now_stream = solution[1] * z_stream > solution[0] * x_main + solution[1] * y_epilogue
            if np.array_equal(now_stream, stream_bound):
                break
            stream_bound = now_stream
    best = min(candidates, key=true_cost)
    device, parameters = device_for(best)
    stream_bound = best[1] * z_stream > best[0] * x_main + best[1] * y_epilogue
    predicted = np.asarray(gemm_time_s(1, m, n, k, device, in_bytes=e, out_bytes=e), dtype=float)
    errors = (predicted - times) / times
    peak = constants["peak_flops_per_s"]
    residuals = [{"name": r["name"], "tokens": r["tokens"], "m": r["m"], "n": r["n"], "k": r["k"],
                  "measured_s": float(t), "median_s": float(r["time_s"]), "predicted_s": float(p), "relative_error": float(err),
                  "measured_efficiency": r["flops"] / (t * peak), "predicted_efficiency": r["flops"] / (p * peak),
                  "stream_bound": bool(s)}
                 for r, t, p, err, s in zip(rows, times, predicted, errors, stream_bound)]
    return {"form": "distcalc.compute.device.gemm_time_s", "device": constants["name"], "dtype":
            config.get("dtype", "float32"), "device_constants": constants, "parameters": parameters,
            "rms_relative_error": float(np.sqrt(np.mean(errors**2))), "residuals": residuals}
