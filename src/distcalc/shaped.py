"""Per-configuration arrays of a given shape, without building a broadcast view when the array already has
it: the step-time model turns hundreds of per-message values into arrays over its configurations, and one
``np.broadcast_to`` costs more than the arithmetic on a one-configuration array."""

from __future__ import annotations

from typing import Any

import numpy as np


def float_of_shape(value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """``value`` as a float64 array of ``shape`` (read-only where broadcast): the array itself when it is one
    already, else ``np.broadcast_to`` of it."""
    array = np.asarray(value, dtype=float)
    return array if array.shape == shape else np.broadcast_to(array, shape)
