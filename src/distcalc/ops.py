"""One formula, two kinds of input: the elementwise operations the cost models use, as NumPy (arrays of
configurations: the search, :func:`distcalc.analyze.evaluate_batch`) or on Python numbers (one
configuration: :func:`distcalc.analyze.analyze`).

A formula takes ``xp`` — :mod:`numpy` itself or :data:`SCALAR`, a namespace with the same names — and is
written once; its entry point picks the namespace (:func:`scalar_inputs`). NumPy pays about a microsecond of
dispatch per operation whatever the array's size, so one configuration priced on size-1 arrays costs
hundreds of times the arithmetic; on Python floats each operation is the same IEEE-754 double operation
(correctly rounded ``+ − × ÷``, exact ``min``/``max``/``ceil``), so both namespaces give the same numbers
bit for bit, as long as integers stay below 2**53 (NumPy converts int64 to float64 before a true
division; Python divides the integers exactly and rounds once — the same double when both are exact).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

ArrayLike = Any


class _ScalarOps:
    """The subset of NumPy's namespace the formulas use, on Python numbers (``x`` a float or an int)."""

    @staticmethod
    def asarray(x: Any, dtype: Any = None) -> Any:
        return float(x) if dtype is float else x

    @staticmethod
    def where(condition: Any, a: Any, b: Any) -> Any:
        return a if condition else b

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        return a if a >= b else b

    @staticmethod
    def minimum(a: Any, b: Any) -> Any:
        return a if a <= b else b

    @staticmethod
    def ceil(x: Any) -> float:
        return float(math.ceil(x))

    @staticmethod
    def divide(a: Any, b: Any) -> float:
        return a / b

    @staticmethod
    def multiply(a: Any, b: Any) -> Any:
        return a * b


#: The Python-number namespace (``xp``) of one configuration.
SCALAR = _ScalarOps()


def scalar_inputs(*values: Any) -> tuple[tuple[Any, ...], tuple[int, ...]] | None:
    """``(values as Python numbers, their broadcast shape)`` when every value holds one number (a Python
    or NumPy scalar, or an array of size 1), else None (evaluate with NumPy)."""
    out = []
    shape: tuple[int, ...] = ()
    for value in values:
        kind = type(value)
        if kind is int or kind is float:  # the commonest inputs first, by exact type (no isinstance chain)
            out.append(value)
        elif isinstance(value, np.ndarray):
            if value.size != 1:
                return None
            if value.ndim > len(shape):
                shape = value.shape
            out.append(value.item())
        elif isinstance(value, (int, float, np.generic)):
            out.append(value.item() if isinstance(value, np.generic) else value)
        else:
            return None
    return tuple(out), shape


def float_array(value: float, shape: tuple[int, ...]) -> np.ndarray:
    """A scalar result back in the shape its array inputs had (a 0-d array for scalar inputs)."""
    if shape == (1,):  # one configuration: np.array of a list skips np.full's Python-level steps
        return np.array((value,), dtype=float)
    return np.full(shape, value, dtype=float)


def array_of_shape(value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``np.full(shape, value)`` (the dtype NumPy gives ``value``: int64 for a Python int, float64 for a float);
    the shape of one configuration without np.full's Python-level steps."""
    if shape == (1,):
        return np.array((value,))
    return np.full(shape, value)
