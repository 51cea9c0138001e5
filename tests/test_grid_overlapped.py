"""Dimension-concurrent RS/AG without phase barriers (the busiest dimension sets the time) against T04."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from distcalc.collective.grid import concurrent_reduce_scatter, concurrent_reduce_scatter_overlapped

M, B, ALPHA = float(1 << 24), 100e9, 5e-6
dims_st = st.lists(st.integers(min_value=2, max_value=9), min_size=1, max_size=3)


def _time(terms) -> float:
    return terms.alpha_term_s + terms.bw_term_s


@given(dims_st, st.booleans(), st.booleans(), st.floats(min_value=1.0, max_value=2.0**34))
def test_never_above_the_phase_synchronous_form(dims, wrap, allgather, size):
    phased = concurrent_reduce_scatter(dims, size, B, ALPHA, wrap, allgather)
    overlapped = concurrent_reduce_scatter_overlapped(dims, size, B, ALPHA, wrap, allgather)
    assert 0.0 < _time(overlapped) <= _time(phased) * (1 + 1e-12)
    assert overlapped.sent_bytes == pytest.approx(phased.sent_bytes, rel=1e-12)


@given(st.integers(min_value=2, max_value=9), st.integers(min_value=1, max_value=3), st.booleans())
def test_equal_dimensions_have_no_barrier_to_drop(n, k, wrap):
    dims = [n] * k
    phased = concurrent_reduce_scatter(dims, M, B, ALPHA, wrap)
    overlapped = concurrent_reduce_scatter_overlapped(dims, M, B, ALPHA, wrap)
    assert overlapped.steps == phased.steps
    assert _time(overlapped) == pytest.approx(_time(phased), rel=1e-12)


def test_torus_4x2_by_hand():
    # part 0: dim 4 (2 steps, 3/4·(1/2)/(2B)) then dim 2; part 1: dim 2 then dim 4 (2 steps, 3/4·(1/4)/(2B)):
    # the wraparound dimension of 4 carries both, 4α + (3/16 + 3/32)·M/B = 4α + 9/32·M/B (T04: 4α + 11/32·M/B)
    overlapped = concurrent_reduce_scatter_overlapped([4, 2], M, B, ALPHA, True)
    assert overlapped.steps == 4
    assert overlapped.bw_term_s == pytest.approx(9 / 32 * M / B, rel=1e-12)
    assert concurrent_reduce_scatter([4, 2], M, B, ALPHA, True).bw_term_s == pytest.approx(11 / 32 * M / B)
