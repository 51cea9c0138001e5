"""The vectorisation of the step-time blocks (:mod:`distcalc.analyze.blocks`): a block depends on few configuration
fields, so it is evaluated once per distinct combination of those fields (:func:`dedupe`, :func:`key_table`) and
its record of terms (:mod:`distcalc.analyze.block_terms`) broadcast back to the batch (:func:`run_block`). Pure
bookkeeping: no physics lives here."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any, Callable, TypeVar

import numpy as np

from distcalc.analyze.block_terms import PER_ROW
from distcalc.shaped import float_of_shape

R = TypeVar("R")


def dedupe(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(index of one representative per distinct row, inverse index) of integer columns of equal shape."""
    flat = [np.asarray(c, dtype=np.int64).ravel() for c in columns]
    if flat[0].size == 1:  # one configuration (analyze): its own representative
        return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    code = np.zeros(flat[0].shape, dtype=np.int64)
    radix = 1
    for col in flat:
        low, high = int(col.min()), int(col.max())
        span = high - low + 1
        if radix * span >= 2**62:
            stacked = np.stack(flat, axis=1)
            _, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
            return first, inverse.ravel()
        code += (col - low) * radix
        radix *= span
    if radix <= max(1 << 16, 4 * code.size):  # small key space: O(n) table lookup instead of a sort
        index = np.arange(code.size, dtype=np.int64)
        representative = np.full(radix, -1, dtype=np.int64)
        representative[code[::-1]] = index[::-1]  # first occurrence of each code
        present = np.flatnonzero(representative >= 0)
        slot = np.empty(radix, dtype=np.int64)
        slot[present] = np.arange(present.size)
        return representative[present], slot[code]
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return first, inverse


def key_table(columns: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Distinct rows of small non-negative integer columns of one shape: (the distinct rows as a dict of
    1-d int64 arrays, inverse index of every element into them). Constant columns (e.g. a broadcast
    scalar) add nothing to the key; the others are packed into one integer code (mixed radix) and, when
    the code space is small, found with a bincount instead of a sort."""
    names = list(columns)
    flat = {k: np.asarray(v).reshape(-1) for k, v in columns.items()}
    n = next(iter(flat.values())).size
    if n == 1:  # one configuration (analyze): one row, nothing varies
        return {k: flat[k].astype(np.int64) for k in names}, np.zeros(1, dtype=np.intp)
    varying, lows, spans = [], [], []
    for k in names:
        col = flat[k]
        if col.size and col.strides[0] == 0:  # broadcast scalar
            continue
        low, high = int(col.min()), int(col.max())
        if high > low:
            varying.append(k), lows.append(low), spans.append(high - low + 1)
    radix = int(np.prod(spans, dtype=object)) if spans else 1
    if radix > max(1 << 16, 4 * n):
        first, inverse = dedupe([flat[k] for k in names])
        return {k: flat[k][first].astype(np.int64) for k in names}, inverse.astype(np.intp)
    code = np.zeros(n, dtype=np.int64)
    scale = 1
    for k, low, span in zip(varying, lows, spans):
        code += (flat[k] - low) * scale if low or scale > 1 else flat[k]
        scale *= span
    present = np.flatnonzero(np.bincount(code, minlength=radix)) if varying else np.zeros(1, dtype=np.int64)
    slot = np.zeros(radix, dtype=np.intp)
    slot[present] = np.arange(present.size)
    inverse = slot[code] if varying else np.zeros(n, dtype=np.intp)
    rows = {k: np.full(present.size, int(flat[k][0]) if n else 0, dtype=np.int64) for k in names}
    scale = 1
    for k, low, span in zip(varying, lows, spans):
        rows[k] = low + (present // scale) % span
        scale *= span
    return rows, inverse


def _sub(c: dict[str, np.ndarray], first: np.ndarray) -> dict[str, np.ndarray]:
    return {k: np.asarray(v).ravel()[first] for k, v in c.items()}


_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}


def _fields_of(cls: type) -> tuple[tuple[str, bool], ...]:
    """(name, holds arrays over rows) of each of ``cls``'s fields (all but those declared ``kept``)."""
    of = _FIELDS.get(cls)
    if of is None:
        of = _FIELDS[cls] = tuple((f.name, f.metadata.get(PER_ROW, True)) for f in fields(cls))
    return of


def broadcast_record(record: R, to_rows: Callable[[Any], np.ndarray]) -> R:
    """``record`` (a dataclass) with ``to_rows`` applied to each per-row field; a field holding a dataclass is
    broadcast the same way, ``None`` and the :func:`~distcalc.analyze.block_terms.kept` fields pass through."""
    values = []
    for name, per_row in _fields_of(type(record)):
        value = getattr(record, name)
        if per_row and value is not None:
            # an array (the common case, tested first: is_dataclass costs more than the broadcast of one element)
            value = (to_rows(value) if type(value) is np.ndarray or not is_dataclass(value)
                     else broadcast_record(value, to_rows))
        values.append(value)
    return type(record)(*values)  # the fields in their declared order


def run_block(block: Callable[[dict[str, np.ndarray]], R], key: tuple[str, ...], c: dict[str, np.ndarray],
              shape: tuple[int, ...]) -> R:
    """Evaluate ``block`` (returning a dataclass of its terms) on the distinct rows of ``key`` and broadcast
    the record's per-row fields back to ``shape`` (:func:`broadcast_record`)."""
    first, inverse = dedupe([c[k] for k in key])
    if inverse.size == 1 and shape == (1,) and all(np.shape(v) == (1,) for v in c.values()):
        # one configuration (analyze): it is its own row, so the block takes the columns as they are and each
        # result is copied once into a float64 array of one element (what taking row 0 gives, for less)
        return broadcast_record(block(c), lambda v: np.array(v, dtype=float).reshape(shape))
    sub = block(_sub(c, first))
    n = first.shape
    return broadcast_record(sub, lambda v: float_of_shape(v, n)[inverse].reshape(shape))
