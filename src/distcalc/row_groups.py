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


#: Largest key space coded by a table lookup (:func:`compact_codes`); beyond it, a sort.
DENSE_CODES = 1 << 22
#: Columns spanning more values than this are replaced by the ranks of their values before they are packed.
SPARSE_WIDTH = 64


def compact_codes(key: np.ndarray, size: int) -> tuple[np.ndarray, int]:
    """(rank of each element of ``key`` among its distinct values, number of distinct values), for
    0 <= key < size: ``np.unique(key, return_inverse=True)`` without a sort while the key space is small."""
    if size <= DENSE_CODES:
        seen = np.zeros(size, dtype=bool)
        seen[key] = True
        lookup = np.cumsum(seen, dtype=np.int64)
        lookup -= 1
        return lookup[key], int(lookup[-1]) + 1
    unique, inverse = np.unique(key, return_inverse=True)
    return inverse.reshape(-1), int(unique.size)


def lexicographic_codes(columns: list[np.ndarray], start: tuple[np.ndarray, int] | None = None
                        ) -> tuple[np.ndarray, int]:
    """(code per row, number of codes) of the distinct rows of equal-length 1-d integer ``columns``, the
    codes in the order of the rows sorted by their first column, then the second, …; ``start``: (codes,
    count) of columns that come before these. Each column is a digit (its offset from its minimum) of one
    integer key (a wide column: the rank of its value), compacted (:func:`compact_codes`) whenever the key space would outgrow the rows — a few
    passes over the rows per column, no sort. Broadcast scalars (stride 0) and constant columns add nothing.

    The key is built in place in one array of the caller's rows; the columns' minima are not subtracted
    row by row but kept as one number (``offset``: the key holds code + offset) and taken off before a
    compaction and at the end — the same integers, one pass fewer per column."""
    rows = columns[0].shape[0] if columns else (0 if start is None else start[0].shape[0])
    key, size = start if start is not None else (None, 1)
    owned, offset = False, 0  # whether ``key`` is this function's own array (safe to change in place)
    for column in columns:
        if column.strides and column.strides[0] == 0:
            continue
        low, high = int(column.min()), int(column.max())
        width = high - low + 1
        if width == 1:
            continue
        if width > SPARSE_WIDTH:  # a wide range (dp, cp, micro-batch: a few of thousands of values): its ranks
            column, width = compact_codes(column - low, width)
            low = 0
        if key is None:  # the first digit: the key is the column's offset from its minimum
            key, owned, size = np.subtract(column, low, dtype=np.int64), True, width
            continue
        if size * width > max(rows, 1 << 16):
            if offset:
                key = np.subtract(key, offset, out=key if owned else None)
                offset = 0
            key, size = compact_codes(key, size)
            owned = True
        key = np.multiply(key, width, out=key if owned else None, dtype=np.int64)
        owned = True
        key += column
        offset = offset * width + low
        size *= width
    if key is None:
        key = np.zeros(rows, dtype=np.int64)
    elif offset:
        key = np.subtract(key, offset, out=key if owned else None)
    return compact_codes(key, size)


def distinct_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of one representative per distinct row, inverse index) of a 2-d float array, rows equal when
    their bits are: :func:`distinct_columns` of its columns."""
    return distinct_columns(list(np.asarray(matrix, dtype=np.float64).T))


def distinct_columns(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(index of one representative per distinct row, inverse index) of the rows that equal-length 1-d
    ``columns`` (float64 or int64, compared by their 64 bits) make: as ``np.unique(rows, axis=0,
    return_index=True, return_inverse=True)`` up to the order of the distinct rows and the choice of each one's
    representative row, found by sorting one 64-bit hash per row (no matrix of the rows is built); every row is
    checked against its representative, column by column, and a hash collision falls back to the full sort."""
    bits = [np.ascontiguousarray(c, dtype=np.float64 if c.dtype.kind == "f" else np.int64).view(np.uint64)
            for c in columns]
    digest = np.zeros(bits[0].shape[0], dtype=np.uint64)
    for column in bits:  # FNV-style mix; uint64 arithmetic wraps
        digest *= np.uint64(1099511628211)
        digest ^= column
    order = np.argsort(digest)  # equal digests side by side (any order among them: one is the representative)
    ordered = digest[order]
    starts = np.empty(ordered.size, dtype=bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    inverse = np.empty(ordered.size, dtype=np.int64)
    inverse[order] = np.cumsum(starts) - 1
    first = order[starts]
    representative = first[inverse]
    if not all(np.array_equal(column[representative], column) for column in bits):
        _, first, inverse = np.unique(np.stack(bits, axis=1), axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
    return first, inverse
