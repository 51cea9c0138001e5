"""The vectorisation of the step-time blocks (:mod:`distcalc.analyze.blocks`): a block depends on few configuration
fields, so it is evaluated once per distinct combination of those fields (:func:`dedupe`, :func:`key_table`) and
its results broadcast back to the batch (:func:`run_block`). Pure bookkeeping: no physics lives here."""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.row_groups import lexicographic_codes
from distcalc.shaped import float_of_shape


def dedupe(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(index of the first row of each distinct row, inverse index) of integer columns of equal shape, the
    distinct rows in the order of their mixed-radix code (the first column the least significant digit), by
    :func:`distcalc.row_groups.lexicographic_codes` (a few passes per column, no sort of the rows)."""
    flat = [np.asarray(c, dtype=np.int64).ravel() for c in columns]
    if flat[0].size == 1:  # one configuration (analyze): its own representative
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    inverse, count = lexicographic_codes(flat[::-1])
    first = np.empty(count, dtype=np.int64)
    first[inverse[::-1]] = np.arange(inverse.size - 1, -1, -1)  # the last write of each code: its first row
    return first, inverse


def key_table(columns: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Distinct rows of small non-negative integer columns of one shape: (the distinct rows as a dict of
    1-d int64 arrays, inverse index of every element into them), in the order of :func:`dedupe`. Constant
    columns (e.g. a broadcast scalar) add nothing to the key."""
    names = list(columns)
    flat = {k: np.asarray(v).reshape(-1) for k, v in columns.items()}
    n = next(iter(flat.values())).size
    if n == 1:  # one configuration (analyze): one row, nothing varies
        return {k: flat[k].astype(np.int64) for k in names}, np.zeros(1, dtype=np.intp)
    first, inverse = dedupe([flat[k] for k in names])
    return {k: flat[k][first].astype(np.int64) for k in names}, inverse.astype(np.intp)


def _sub(c: dict[str, np.ndarray], first: np.ndarray) -> dict[str, np.ndarray]:
    return {k: np.asarray(v).ravel()[first] for k, v in c.items()}


def run_block(block, key: tuple[str, ...], c: dict[str, np.ndarray], shape: tuple[int, ...]) -> dict[str, Any]:
    """Evaluate ``block`` on the distinct rows of ``key`` and broadcast the array results back to ``shape``."""
    first, inverse = dedupe([c[k] for k in key])
    if inverse.size == 1 and shape == (1,) and all(np.shape(v) == (1,) for v in c.values()):
        # one configuration (analyze): it is its own row, so the block takes the columns as they are and each
        # result is copied once into a float64 array of one element (what taking row 0 gives, for less)
        return {k: (v if k.startswith("_") else np.array(v, dtype=float).reshape(shape))
                for k, v in block(c).items()}
    sub = block(_sub(c, first))
    n = first.shape
    return {k: (v if k.startswith("_") else float_of_shape(v, n)[inverse].reshape(shape))
            for k, v in sub.items()}
