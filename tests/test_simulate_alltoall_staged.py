"""Distance-staged All-to-All phases on mesh lines reach the bisection load (T09) in n − 1 steps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.simulate import simulate
from distcalc.simulate.alltoall import staged_line_load
from distcalc.topology import make_topology

M, ALPHA, BW = float(1 << 20), 5e-6, 100e9


@given(st.integers(min_value=1, max_value=500))
def test_staged_load_is_the_bisection_load(n):
    assert staged_line_load(n) == (n // 2) * ((n + 1) // 2)


@settings(max_examples=10, deadline=None)
@given(st.integers(min_value=2, max_value=12), st.sampled_from(["step", "event"]))
def test_line_alltoall_is_t09_in_both_modes(n, mode):
    topo = make_topology("mesh", n, shape=(n,), bandwidth_bytes_per_s=BW, latency_s=ALPHA)
    result = simulate("all-to-all", M, topo, "direct", elements_per_chunk=1, mode=mode)
    assert result.verified
    block_time = M / n / BW
    assert result.steps == n - 1
    assert result.timing.latency_term_s == pytest.approx((n - 1) * ALPHA, rel=1e-9)
    assert result.timing.bandwidth_term_s == pytest.approx(staged_line_load(n) * block_time, rel=1e-9)
    assert result.bytes_sent_per_gpu == pytest.approx((n - 1) / n * M, rel=1e-9)  # own blocks only
