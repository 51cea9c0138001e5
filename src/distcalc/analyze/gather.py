"""Union rows → configurations: the step model (:mod:`distcalc.analyze.core`) computes each term once per
distinct value of the fields it depends on (a *union row*) and every configuration reads its row's value.

:func:`take_rows` does that for one array; :func:`gather` for a whole record of arrays (any dataclass, nested
records included), lazily: a field is taken when it is read, so the configurations pay only for the terms
they use.
"""

from __future__ import annotations

from dataclasses import is_dataclass
from typing import Any, Generic, TypeVar

import numpy as np

R = TypeVar("R")


def take_rows(x: Any, index: np.ndarray) -> np.ndarray:
    """``x`` (one value per union row) at each configuration's union row ``index``."""
    return np.take(x, index, mode="clip")


class Gathered(Generic[R]):
    """A record over union rows seen from every configuration: reading a field gives it taken at the
    configurations' rows (:func:`take_rows`); a field that is itself a record gives that record gathered."""

    __slots__ = ("_of",)

    def __init__(self, record: R, index: np.ndarray):
        object.__setattr__(self, "_of", (record, index))

    def __getattribute__(self, name: str) -> Any:
        # every read is a field of the record: looked up here directly rather than in __getattr__, which runs
        # only after the ordinary lookup has failed with an AttributeError (raised and caught on every read)
        if name[0] == "_":  # Python's own (__class__, __dict__, …): the view's, not the record's
            return object.__getattribute__(self, name)
        record, index = _slot(self)
        value = getattr(record, name)
        if type(value) is np.ndarray:  # the common case first (this runs ~20 times per evaluation)
            return np.take(value, index, mode="clip")
        if is_dataclass(value):
            return Gathered(value, index)
        if value is None or isinstance(value, (dict, list, tuple, str)):
            raise TypeError(f"{type(record).__name__}.{name} is not a per-row array or record "
                            f"({type(value).__name__})")
        return take_rows(value, index)


_slot = Gathered._of.__get__  # the (record, index) pair of a Gathered, past its __getattribute__


class UnionRows:
    """One value per union row and every configuration's union row ``index``, not yet taken: a consumer that
    needs only some configurations takes those (:meth:`at`) instead of all of them (:func:`take_rows`)."""

    __slots__ = ("values", "index")

    def __init__(self, values: np.ndarray, index: np.ndarray):
        self.values, self.index = values, index

    def at(self, rows: np.ndarray, index_at_rows: np.ndarray | None = None) -> np.ndarray:
        """The values of configurations ``rows`` (``index_at_rows``: ``index[rows]``, when already taken)."""
        return take_rows(self.values, self.index[rows] if index_at_rows is None else index_at_rows)


def gather(record: R, index: np.ndarray) -> Gathered[R]:
    """``record`` (a dataclass of arrays over union rows) at each configuration's union row ``index``."""
    if not is_dataclass(record):
        raise TypeError(f"gather takes a dataclass of per-row arrays, not {type(record).__name__}")
    return Gathered(record, index)
