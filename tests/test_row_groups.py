"""Grouping rows by integer keys and finding distinct float rows (the executed-schedule batching)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.row_groups import distinct_columns, distinct_rows, row_groups

_INTS = st.integers(min_value=-(1 << 40), max_value=1 << 40)


def _expected(columns: list[np.ndarray]) -> dict[tuple[int, ...], list[int]]:
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, row in enumerate(np.stack(columns, axis=1).tolist()):
        groups.setdefault(tuple(row), []).append(i)
    return dict(sorted(groups.items()))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4).flatmap(lambda width: st.lists(
    st.tuples(*[st.one_of(st.integers(0, 3), _INTS)] * width), min_size=1, max_size=60)))
def test_row_groups_is_a_partition_by_key_in_key_order(rows):
    columns = [np.array(col, dtype=np.int64) for col in zip(*rows)]
    got = [(key, group.tolist()) for key, group in row_groups(columns)]
    assert got == list(_expected(columns).items())


def test_row_groups_of_wide_columns_whose_code_space_would_overflow():
    rng = np.random.default_rng(0)
    columns = [rng.integers(0, 60_000, 500) for _ in range(5)]  # 60,000^5 > 2^62 offset codes
    assert [(k, g.tolist()) for k, g in row_groups(columns)] == list(_expected(columns).items())


def test_row_groups_of_nothing():
    assert list(row_groups([np.zeros(0, dtype=np.int64)])) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, -0.0, 1.5, 2.0, np.inf, 1e-300]), min_size=3, max_size=3),
                min_size=1, max_size=40))
def test_distinct_rows_matches_a_full_sort(rows):
    matrix = np.array(rows, dtype=float)
    first, inverse = distinct_rows(matrix)
    bits = matrix.view(np.uint64)
    assert np.array_equal(bits[first][inverse], bits)  # every row is its representative, bit for bit
    assert first.size == np.unique(bits, axis=0).shape[0]  # and no two representatives are equal


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0.0, -0.0, 1.5, np.inf]), st.integers(-3, 3)), min_size=1, max_size=40))
def test_distinct_columns_of_float_and_integer_columns(rows):
    floats, ints = (np.array(col) for col in zip(*rows))
    first, inverse = distinct_columns([floats.astype(float), ints.astype(np.int64)])
    bits = np.stack([floats.astype(float).view(np.uint64), ints.astype(np.int64).view(np.uint64)], axis=1)
    assert np.array_equal(bits[first][inverse], bits)
    assert first.size == np.unique(bits, axis=0).shape[0]
