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


@pytest.mark.parametrize("size,steps,coefficient", [(float(1 << 20), 4, 9 / 32), (float(1 << 30), 3, 11 / 32)])
def test_torus_4x2_by_hand(size, steps, coefficient):
    # part 0: dim 4 (2α + 3/16·M/B) then dim 2 (α + 1/16·M/B); part 1: dim 2 (α + 1/4·M/B) then dim 4
    # (2α + 3/32·M/B). Part 1 waits for part 0 to leave dim 4 while 2α + 3/16·M/B > α + 1/4·M/B (small M:
    # 4α + 9/32·M/B), otherwise it runs straight on (3α + 11/32·M/B); T04 is 4α + 11/32·M/B either way
    overlapped = concurrent_reduce_scatter_overlapped([4, 2], size, B, ALPHA, True)
    assert overlapped.steps == steps
    assert overlapped.bw_term_s == pytest.approx(coefficient * size / B, rel=1e-12)
    phased = concurrent_reduce_scatter([4, 2], size, B, ALPHA, True)
    assert (phased.steps, phased.bw_term_s) == (4, pytest.approx(11 / 32 * size / B))


@pytest.mark.parametrize("kind,shape", [("torus", (4, 2)), ("torus", (4, 3, 2)), ("mesh", (4, 3, 2)),
                                        ("torus", (8, 4, 2)), ("mesh", (6, 3))])
@pytest.mark.parametrize("size", [1024.0, float(1 << 26), float(1 << 30)])
def test_event_simulation_is_the_overlapped_form(kind, shape, size):
    import math

    from distcalc.simulate import simulate
    from distcalc.topology import make_topology

    topo = make_topology(kind, math.prod(shape), shape=shape, bandwidth_bytes_per_s=B, latency_s=ALPHA)
    result = simulate("reduce-scatter", size, topo, "dim-concurrent", verify=False, mode="event")
    overlapped = concurrent_reduce_scatter_overlapped(topo.dims, size, B, ALPHA, kind == "torus")
    assert result.time_s == pytest.approx(_time(overlapped), rel=1e-9)
    assert result.timing.latency_term_s == pytest.approx(overlapped.alpha_term_s, rel=1e-9)
