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


degrees = st.sampled_from([1, 2, 3, 4, 8, 16])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(degrees, degrees, degrees, degrees, degrees), min_size=2, max_size=5), st.data(),
       st.sampled_from(["tp-cp-dp-pp", "tp-dp-cp-pp", "cp-tp-dp-pp", "tp-cp-pp-dp"]))
def test_group_keys_of_one_configuration_equal_its_row_of_a_batch(rows, data, order):
    """analyze's groups laid out on Python integers are the batch's, value and dtype."""
    from distcalc.analyze.comm import group_keys

    i = data.draw(st.integers(min_value=0, max_value=len(rows) - 1))
    columns = [np.array([row[j] for row in rows], dtype=np.int64) for j in range(5)]
    batch = group_keys(*columns, order)
    one = group_keys(*(c[i:i + 1] for c in columns), order)
    for dim, key in one.items():
        for got, full in ((key.size, batch[dim].size), (key.stride, batch[dim].stride)):
            assert got.shape == (1,) and got.dtype == full.dtype and got[0] == full[i]


@settings(max_examples=100, deadline=None)
@given(st.integers(min_value=1, max_value=128), st.lists(st.tuples(
    st.integers(min_value=1, max_value=16), st.integers(min_value=0, max_value=1),
    st.integers(min_value=0, max_value=9), st.integers(min_value=0, max_value=9)), min_size=2, max_size=5), st.data())
def test_stage_layer_split_of_one_configuration_equals_its_row_of_a_batch(layers, rows, data):
    from distcalc.parallel import stage_layer_split

    i = data.draw(st.integers(min_value=0, max_value=len(rows) - 1))
    columns = [np.array([row[j] for row in rows], dtype=np.int64) for j in range(4)]
    batch = stage_layer_split(layers, *columns)
    one = stage_layer_split(layers, *(c[i:i + 1] for c in columns))
    scalar = stage_layer_split(layers, *(int(c[i]) for c in columns))
    for got, zero_d, full in zip(one, scalar, batch):
        assert got.shape == (1,) and got.dtype == np.float64 and got[0] == full[i]
        assert np.ndim(zero_d) == 0 and float(zero_d) == full[i]


def test_by_zero_stage_is_stack_by_columns():
    from distcalc.analyze.dp_tables import by_zero_stage

    for n in (1, 3):
        columns = [np.arange(n, dtype=float) + 10.0 * k for k in range(4)]
        on = np.array([1.0, 0.0, 1.0])[:n]
        expected = (np.stack(columns, axis=1) * on[:, None]).ravel()
        assert (by_zero_stage(*columns) * on[:, None]).ravel().tolist() == expected.tolist()
