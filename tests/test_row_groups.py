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


def _ranks(columns: list[np.ndarray]) -> tuple[np.ndarray, int]:
    """Reference: the rank of each row among the distinct rows sorted lexicographically (a full sort)."""
    unique, inverse = np.unique(np.stack(columns, axis=1), axis=0, return_inverse=True)
    return inverse.reshape(-1), unique.shape[0]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 5).flatmap(lambda width: st.lists(
    st.tuples(*[st.one_of(st.integers(0, 3), st.integers(90, 200), st.integers(-5000, 5000))] * width),
    min_size=1, max_size=80)), st.integers(0, 2))
def test_lexicographic_codes_are_the_sorted_ranks(rows, prefix):
    """Codes in the order of a lexicographic sort, every column a digit (narrow, wide and negative ranges;
    with a prefix already coded and passed as ``start``, which must come back unchanged)."""
    from distcalc.row_groups import lexicographic_codes

    columns = [np.array(col, dtype=np.int64) for col in zip(*rows)]
    expected = _ranks(columns)
    codes, count = lexicographic_codes(columns)
    assert count == expected[1] and np.array_equal(codes, expected[0])
    prefix = min(prefix, len(columns) - 1)
    if prefix:
        start = lexicographic_codes(columns[:prefix])
        kept = start[0].copy()
        codes, count = lexicographic_codes(columns[prefix:], start)
        assert count == expected[1] and np.array_equal(codes, expected[0])
        assert np.array_equal(start[0], kept)


def test_lexicographic_codes_compacting_a_large_key_space():
    """Many rows and wide digits: the key is compacted on the way (offsets taken off first), codes still the
    sorted ranks; broadcast and constant columns add nothing."""
    from distcalc.row_groups import lexicographic_codes

    rng = np.random.default_rng(1)
    columns = [rng.integers(low, low + width, 70_000) for low, width in
               ((7, 40), (-3, 60), (1000, 30), (5, 2), (0, 4000), (12, 50))]
    expected = _ranks(columns)
    extra = [np.broadcast_to(np.int64(9), (70_000,)), np.full(70_000, 4, dtype=np.int64)]
    codes, count = lexicographic_codes(columns[:3] + extra + columns[3:])
    assert count == expected[1] and np.array_equal(codes, expected[0])
