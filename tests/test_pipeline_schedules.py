"""Pipeline schedules: the event simulator agrees with the closed forms; bubble properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.errors import ConfigError
from distcalc.pipeline import (bubble_fraction, in_flight_micro_batches, pipeline_time_s, simulate_schedule)

GPIPE, ONE_F_ONE_B, INTERLEAVED, ZB = 0, 1, 2, 3


@settings(max_examples=40, deadline=None)
@given(p=st.integers(1, 6), m=st.integers(1, 12), tf=st.floats(0.5, 2), tb=st.floats(0.5, 3))
def test_gpipe_and_1f1b_match_closed_form(p, m, tf, tb):
    for schedule in (GPIPE, ONE_F_ONE_B):
        sim = simulate_schedule(schedule, p, m, 1, tf, tb).makespan_s
        assert sim == pytest.approx(float(pipeline_time_s(schedule, p, m, 1, tf + tb, tf + tb)), rel=1e-9)


@settings(max_examples=30, deadline=None)
@given(p=st.integers(2, 5), k=st.integers(1, 3), v=st.integers(2, 4))
def test_interleaved_matches_closed_form(p, k, v):
    m = k * p
    sim = simulate_schedule(INTERLEAVED, p, m, v, 1.0, 2.0).makespan_s
    assert sim == pytest.approx(float(pipeline_time_s(INTERLEAVED, p, m, v, 3.0, 3.0)), rel=1e-9)


@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (4, 16), (6, 12)])
def test_zero_bubble_h1_matches_qi_et_al(p, m):
    """ZB-H1 with T_F = T_B = T_W: bubble (p−1)(T_F + T_B − T_W), a third of 1F1B's."""
    sim = simulate_schedule(ZB, p, m, 1, 1.0, 1.0, 1.0).makespan_s
    assert sim == pytest.approx(m * 3 + (p - 1) * 1.0)
    assert sim == pytest.approx(float(pipeline_time_s(ZB, p, m, 1, 3.0, 3.0, 1.0)))


def test_bubble_fractions():
    assert float(bubble_fraction(ONE_F_ONE_B, 8, 64)) == pytest.approx(7 / 64)
    assert float(bubble_fraction(INTERLEAVED, 8, 64, 3)) == pytest.approx(7 / 192)
    assert float(bubble_fraction(ZB, 8, 64)) == pytest.approx(7 / 64 / 3)


@settings(max_examples=60, deadline=None)
@given(p=st.integers(1, 64), m=st.integers(1, 512), extra=st.integers(1, 64))
def test_more_micro_batches_never_increase_1f1b_bubble(p, m, extra):
    assert bubble_fraction(ONE_F_ONE_B, p, m + extra) <= bubble_fraction(ONE_F_ONE_B, p, m)


def test_simulated_bubble_equals_closed_form_fraction():
    tl = simulate_schedule(ONE_F_ONE_B, 4, 8, 1, 1.0, 2.0)
    assert tl.bubble_fraction(0) == pytest.approx(3 / 8)


def test_heterogeneous_last_stage_closed_form_close_to_simulation():
    fwd = [1.0, 1.0, 1.0, 1.2]
    bwd = [2.0, 2.0, 2.0, 2.4]
    sim = simulate_schedule(ONE_F_ONE_B, 4, 16, 1, fwd, bwd).makespan_s
    closed = float(pipeline_time_s(ONE_F_ONE_B, 4, 16, 1, 3.6, np.mean(np.add(fwd, bwd))))
    assert closed == pytest.approx(sim, rel=0.03)


def test_in_flight_micro_batches():
    assert float(in_flight_micro_batches(ONE_F_ONE_B, 8, 64, 1, 0)) == 8
    assert float(in_flight_micro_batches(ONE_F_ONE_B, 8, 64, 1, 7)) == 1
    assert float(in_flight_micro_batches(GPIPE, 8, 64)) == 64
    # Korthikanti §4.2.3: interleaved first stage holds p·(1 + (p−1)/(p·v)) micro-batches
    assert float(in_flight_micro_batches(INTERLEAVED, 8, 64, 3, 0)) == pytest.approx(8 * (1 + 7 / 24))


def test_interleaved_needs_multiple_of_pp():
    with pytest.raises(ConfigError):
        simulate_schedule(INTERLEAVED, 4, 6, 2)
