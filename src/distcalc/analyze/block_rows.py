"""The vectorisation of the step-time blocks (:mod:`distcalc.analyze.blocks`): a block depends on few configuration
fields, so it is evaluated once per distinct combination of those fields (:func:`dedupe`, :func:`key_table`) and
its record of terms (:mod:`distcalc.analyze.block_terms`) broadcast back to the batch (:func:`run_block`). Pure
bookkeeping: no physics lives here."""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any, Callable, TypeVar

import numpy as np

from distcalc.analyze.block_terms import PER_ROW
from distcalc.row_groups import lexicographic_codes
from distcalc.shaped import float_of_shape

R = TypeVar("R")


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
