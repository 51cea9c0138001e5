"""Least-squares fits of measured collective times: ``t(M) = a + c·M``, one or two segments.

Fit (per collective and tier): minimise the squared *relative* error ``Σ ((a + c·M_i − t_i) / t_i)²`` over
the sweep's median times ``t_i`` (``numpy.linalg.lstsq`` on the rows ``[1/t_i, M_i/t_i]`` against 1), with
``a ≥ 0`` and ``c ≥ 0`` (when the free solution breaks a bound, the bound is set and the other parameter
refitted). Relative weighting keeps the 1 KiB points (tens of µs) from being ignored next to the 4 MiB ones.

Size-dependent efficiency: real stacks change protocol with the message size (NCCL LL → LL128 → Simple,
``src/graph/tuning.cc``; gloo segments large buffers, ``gloo/allreduce.cc``), so one line may not fit the
whole sweep. Two segments ``(a₁, c₁)`` below and ``(a₂, c₂)`` above a break size are used only when the data
demand it: the one-line fit's RMS relative residual exceeds the measurements' own median relative spread
``(p99 − median) / median`` AND two segments at least halve the squared error (each segment needs ≥ 3 sizes;
the break is placed at the geometric mean of the sizes on either side).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

MIN_SEGMENT_POINTS = 3


@dataclass(frozen=True)
class Segment:
    """``t = intercept_s + seconds_per_byte · M`` for ``min_size_bytes ≤ M < max_size_bytes``."""

    intercept_s: float
    seconds_per_byte: float
    min_size_bytes: float = 0.0
    max_size_bytes: float = math.inf

    def predict(self, size_bytes: np.ndarray | float) -> np.ndarray | float:
        return self.intercept_s + self.seconds_per_byte * np.asarray(size_bytes, dtype=float)


def _weighted_cost(sizes: np.ndarray, times: np.ndarray, a: float, c: float) -> float:
    return float(np.sum(((a + c * sizes - times) / times) ** 2))


def fit_line(sizes: np.ndarray, times: np.ndarray) -> tuple[float, float]:
    """``(a, c)`` ≥ 0 minimising the squared relative error (module docstring)."""
    sizes, times = np.asarray(sizes, dtype=float), np.asarray(times, dtype=float)
    design = np.column_stack([1.0 / times, sizes / times])
    target = np.ones_like(times)
    if sizes.size >= 2:
        (a, c), *_ = np.linalg.lstsq(design, target, rcond=None)
    else:
        a, c = float(times[0]), 0.0
    if a >= 0 and c >= 0:
        if c * sizes.max() < 1e-9 * a:  # a slope below rounding noise: the data show no bandwidth term
            return float(a), 0.0
        return float(a), float(c)
    # Bounded: try c with a = 0, and a with c = 0; keep the better feasible one.
    u, v = design[:, 1], design[:, 0]
    only_c = max(0.0, float(u @ target / (u @ u)))
    only_a = max(0.0, float(v @ target / (v @ v)))
    candidates = [(0.0, only_c), (only_a, 0.0)]
    return min(candidates, key=lambda ac: _weighted_cost(sizes, times, *ac))


def relative_residuals(segments: list[Segment], sizes: np.ndarray, times: np.ndarray) -> np.ndarray:
    """``(predicted − measured) / measured`` per size."""
    return (predict(segments, sizes) - times) / times


def predict(segments: list[Segment], sizes: np.ndarray | float) -> np.ndarray:
    """Evaluate a one- or two-segment fit (each size uses the segment whose range holds it)."""
    sizes = np.asarray(sizes, dtype=float)
    out = segments[-1].predict(sizes)
    for segment in reversed(segments[:-1]):
        out = np.where(sizes < segment.max_size_bytes, segment.predict(sizes), out)
    return out


def fit_segments(sizes: np.ndarray, times: np.ndarray, spread: np.ndarray) -> tuple[list[Segment], str]:
    """One segment, or two where the data demand it (module docstring). Returns the segments and why."""
    order = np.argsort(sizes)
    sizes, times, spread = (np.asarray(x, dtype=float)[order] for x in (sizes, times, spread))
    a, c = fit_line(sizes, times)
    one = [Segment(a, c)]
    one_cost = _weighted_cost(sizes, times, a, c)
    rms = math.sqrt(one_cost / sizes.size)
    noise = float(np.median(spread)) if spread.size else 0.0
    if sizes.size < 2 * MIN_SEGMENT_POINTS or rms <= noise:
        return one, f"one segment: RMS relative residual {rms:.3f} ≤ measurement spread {noise:.3f}" \
            if rms <= noise else f"one segment: {sizes.size} sizes are too few to split"
    best: tuple[float, list[Segment]] | None = None
    for split in range(MIN_SEGMENT_POINTS, sizes.size - MIN_SEGMENT_POINTS + 1):
        a1, c1 = fit_line(sizes[:split], times[:split])
        a2, c2 = fit_line(sizes[split:], times[split:])
        cost = _weighted_cost(sizes[:split], times[:split], a1, c1) + _weighted_cost(
            sizes[split:], times[split:], a2, c2)
        if best is None or cost < best[0]:
            edge = math.sqrt(sizes[split - 1] * sizes[split])
            best = (cost, [Segment(a1, c1, 0.0, edge), Segment(a2, c2, edge, math.inf)])
    assert best is not None
    if best[0] <= 0.5 * one_cost:
        return best[1], (f"two segments: one line leaves RMS relative residual {rms:.3f} > spread {noise:.3f}"
                         f" and the split cuts the squared error {one_cost:.3g} → {best[0]:.3g}")
    return one, (f"one segment: RMS {rms:.3f} > spread {noise:.3f} but two segments only cut the squared "
                 f"error {one_cost:.3g} → {best[0]:.3g} (< 2×)")
