"""Group the rows of a batch by an integer key: one sort for the whole batch instead of one comparison of
every row per distinct key.

The schedule executors (:mod:`distcalc.analyze.executed`, :mod:`distcalc.memory.activations`) run one plan
per distinct (schedule, pp, micro-batches, …) key; a search meets a hundred keys over a million rows, where
``np.all(keys == key, axis=1)`` per key costs a pass over every row each time.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np


#: Integer columns spanning fewer values than this are coded by their offset from the minimum.
SMALL_SPAN = 1 << 16


def row_groups(columns: list[np.ndarray]) -> Iterator[tuple[tuple[int, ...], np.ndarray]]:
    """Each distinct key of the integer ``columns`` (equal-length 1-d arrays) with the positions of its rows,
    ascending within a group; the groups come in ascending key order (as ``np.unique(..., axis=0)``)."""
    if not columns or columns[0].size == 0:
        return
    codes, values = [], []
    for column in columns:
        low, high = int(column.min()), int(column.max())
        if high - low < SMALL_SPAN:  # small integer range: the offset is the code (no sort per column)
            values.append(np.arange(low, high + 1))
            codes.append(column.reshape(-1) - low)
        else:
            uniq, inverse = np.unique(column, return_inverse=True)
            values.append(uniq)
            codes.append(inverse.reshape(-1))
    if np.prod([float(v.size) for v in values]) >= 2.0**62:  # the code space would overflow: compact it
        for j, code in enumerate(codes):
            present, codes[j] = np.unique(code, return_inverse=True)
            values[j] = values[j][present]
            codes[j] = codes[j].reshape(-1)
    combined = np.ravel_multi_index(codes, tuple(v.size for v in values))
    order = np.argsort(combined, kind="stable")
    ordered = combined[order]
    starts = np.flatnonzero(np.diff(ordered)) + 1
    bounds = [0, *starts.tolist(), ordered.size]
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        index = np.unravel_index(int(ordered[lo]), tuple(v.size for v in values))
        yield tuple(int(v[i]) for v, i in zip(values, index)), order[lo:hi]


def distinct_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of one representative per distinct row, inverse index) of a 2-d float array, rows equal when
    their bits are: :func:`distinct_columns` of its columns."""
    return distinct_columns(list(np.asarray(matrix, dtype=np.float64).T))


def distinct_columns(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(index of one representative per distinct row, inverse index) of the rows that equal-length 1-d
    ``columns`` (float64 or int64, compared by their 64 bits) make: as ``np.unique(rows, axis=0,
    return_index=True, return_inverse=True)`` up to the order of the distinct rows, found by sorting one
    64-bit hash per row (no matrix of the rows is built); every row is checked against its representative,
    column by column, and a hash collision falls back to the full sort."""
    bits = [np.ascontiguousarray(c, dtype=np.float64 if c.dtype.kind == "f" else np.int64).view(np.uint64)
            for c in columns]
    digest = np.zeros(bits[0].shape[0], dtype=np.uint64)
    for column in bits:  # FNV-style mix; uint64 arithmetic wraps
        digest *= np.uint64(1099511628211)
        digest ^= column
    _, first, inverse = np.unique(digest, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    if not all(np.array_equal(column[first][inverse], column) for column in bits):
        _, first, inverse = np.unique(np.stack(bits, axis=1), axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    return first, inverse
