"""The one-configuration path (:mod:`distcalc.ops`: the formulas on Python numbers) gives the same float64
numbers as the NumPy path of a batch, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.compute.device import gemm_time_s, load_device
from distcalc.ops import SCALAR, scalar_inputs

DEVICES = [load_device("h100-sxm", "bf16"), load_device("h100-sxm", "fp8"), load_device("a100-80gb", "bf16")]
dims = st.integers(min_value=0, max_value=1 << 17)


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=256), dims, dims, dims, st.integers(min_value=1, max_value=16),
       st.sampled_from([2, 4, 8]), st.integers(min_value=0, max_value=len(DEVICES) - 1))
def test_gemm_one_problem_equals_its_row_of_a_batch(batch, m, n, k, cp, out_bytes, which):
    device = DEVICES[which]
    m_float = m / cp  # a sequence split over cp ranks: a float operand, as the attention GEMMs have
    for rows in (m, m_float):
        column = np.array([rows, rows + 1, 3])  # a batch of three: the NumPy path
        batched = gemm_time_s(batch, column, n, k, device, out_bytes=out_bytes)
        one = gemm_time_s(np.array([batch]), np.array([rows]), n, k, device, out_bytes=out_bytes)
        assert one.shape == (1,)
        assert one[0] == batched[0]
        scalar = gemm_time_s(batch, rows, n, k, device, out_bytes=out_bytes)
        assert np.ndim(scalar) == 0 and float(scalar) == batched[0]


def test_scalar_inputs_takes_single_numbers_only():
    assert scalar_inputs(np.array([3]), 2.5, np.int64(4)) == ((3, 2.5, 4), (1,))
    assert scalar_inputs(np.array([[1]]), 1) == ((1, 1), (1, 1))
    assert scalar_inputs(np.array([1, 2]), 1) is None
    assert scalar_inputs("8", 1) is None


def test_scalar_namespace_matches_numpy():
    for a, b in ((1.5, 2.0), (2.0, 1.5), (3, 3.0), (0.0, -1e-300)):
        assert SCALAR.maximum(a, b) == np.maximum(a, b) and SCALAR.minimum(a, b) == np.minimum(a, b)
        assert SCALAR.divide(a, b) == np.divide(a, b) and SCALAR.multiply(a, b) == np.multiply(a, b)
        assert SCALAR.where(a > b, a, b) == np.where(a > b, a, b)
    assert SCALAR.ceil(7 / 3) == np.ceil(np.divide(7, 3)) and isinstance(SCALAR.ceil(2.5), float)
    assert SCALAR.asarray(3, dtype=float) == 3.0 and isinstance(SCALAR.asarray(3, dtype=float), float)
