"""Pareto fronts of search results (both objectives minimised), vectorized with NumPy."""

from __future__ import annotations

import numpy as np


def pareto_front(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points not dominated in (x, y), both minimised, ordered by increasing x.

    A point is dominated when another point is ≤ in both coordinates and < in at least one. Among exact
    duplicates the first index is kept. Sort by (x, y), then a point is on the front iff its y is strictly
    below the smallest y of every point before it: O(n log n).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((np.arange(x.size), y, x))
    ys = y[order]
    previous_best = np.minimum.accumulate(np.concatenate(([np.inf], ys[:-1])))
    return order[ys < previous_best]


__all__ = ["pareto_front"]
