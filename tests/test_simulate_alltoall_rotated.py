"""Slot-rotated All-to-All on torus and mesh grids of unequal dimensions reaches T05/T09/T13 exactly.

Every block's moves (torus hops; mesh distance-staged cut-through moves) are spread over all S = Σ hops_i
steps by running its move string rotated by r in part r (``simulate/alltoall.py`` ``slot_rotated_rows``):
the busiest link carries 1/S of its load on every step, so both timing modes give α·S + max_i L_i·M/B.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.collective import collective_cost
from distcalc.simulate import simulate, time_routed, to_schedule
from distcalc.simulate.alltoall import slot_rotated_rows, slot_rotated_transfers
from distcalc.simulate.plans import Plan
from distcalc.topology import make_topology

ALPHA, BW = 5e-6, 100e9
REL = 1e-9

shapes = st.lists(st.integers(min_value=2, max_value=6), min_size=2, max_size=3).filter(
    lambda dims: len(set(dims)) > 1 and math.prod(dims) <= 48).map(tuple)


def _hops(shape, wrap):
    return sum(n // 2 if wrap and n >= 3 else n - 1 for n in shape)


def _line_load(n, wrap):
    """Spec T05 / T09 line load L (per M) of one dimension."""
    if wrap and n >= 3:
        return (n * n - n % 2) / (8 * n)
    return (n // 2) * ((n + 1) // 2) / n


@settings(max_examples=25, deadline=None)
@given(shapes, st.booleans(), st.sampled_from(["step", "event"]),
       st.sampled_from([1.0, 4096.0, float(1 << 20), float(3 << 28)]))
def test_unequal_grid_alltoall_is_the_spec_formula(shape, wrap, mode, size_bytes):
    kind = "torus" if wrap else "mesh"
    topo = make_topology(kind, math.prod(shape), shape=shape, bandwidth_bytes_per_s=BW, latency_s=ALPHA)
    result = simulate("all-to-all", size_bytes, topo, "direct", elements_per_chunk=1, mode=mode)
    assert result.verified, result.execution.message  # the best candidate (ties: an older schedule) is run
    analytic = collective_cost("all-to-all", size_bytes, topo, "direct")
    steps = _hops(shape, wrap)
    bandwidth_s = max(_line_load(n, wrap) for n in shape) * size_bytes / BW
    assert result.steps == analytic.steps == steps
    assert result.timing.latency_term_s == pytest.approx(steps * ALPHA, rel=REL)
    assert result.timing.bandwidth_term_s == pytest.approx(bandwidth_s, rel=REL)
    assert analytic.bandwidth_term_s == pytest.approx(bandwidth_s, rel=REL)
    assert result.time_s == pytest.approx(analytic.time_s, rel=REL)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=3).filter(
    lambda dims: 1 < math.prod(dims) <= 64).map(tuple), st.booleans())
def test_row_count_is_known_before_building(shape, wrap):
    rows, parts = slot_rotated_rows(shape, wrap)
    assert rows.step.size == slot_rotated_transfers(shape, wrap)
    assert parts % max(_hops(shape, wrap), 1) == 0


@pytest.mark.parametrize("kind,shape", [("torus", (4, 2)), ("torus", (4, 3, 2)), ("mesh", (4, 2)),
                                        ("mesh", (5, 3)), ("mesh", (3, 3, 2))])
def test_busiest_link_carries_the_same_bytes_on_every_step(kind, shape):
    """The mechanism: every step's busiest link carries max_i L_i·M/S, so Σ_steps max = max_links Σ_steps."""
    size_bytes = float(1 << 20)
    topo = make_topology(kind, math.prod(shape), shape=shape, bandwidth_bytes_per_s=BW, latency_s=ALPHA)
    rows, parts = slot_rotated_rows(shape, kind == "torus")
    n = topo.gpus
    schedule = to_schedule("all-to-all", "direct", topo, size_bytes, Plan(rows, n * n * parts))
    timing = time_routed(schedule, topo, "step")
    steps = _hops(shape, kind == "torus")
    per_step = max(_line_load(d, kind == "torus") for d in shape) * size_bytes / steps
    assert timing.steps == steps
    np.testing.assert_allclose(timing.step_max_link_bytes, per_step, rtol=REL)
    assert timing.max_link_bytes == pytest.approx(per_step * steps, rel=REL)
    analytic = collective_cost("all-to-all", size_bytes, topo, "direct")
    for mode in ("step", "event"):
        timed = time_routed(schedule, topo, mode)
        assert timed.time_s == pytest.approx(analytic.time_s, rel=REL)
        assert timed.latency_term_s == pytest.approx(steps * ALPHA, rel=REL)


def test_not_built_beyond_the_memory_budget(monkeypatch):
    """Where its S-fold rows would not fit, the older k-part schedules run (checked as measured: above T09)."""
    import distcalc.simulate.plans_grid as plans_grid

    topo = make_topology("mesh", 8, shape=(4, 2), bandwidth_bytes_per_s=BW, latency_s=ALPHA)
    fits = simulate("all-to-all", float(1 << 20), topo, "direct", mode="event")
    assert fits.schedule.notes.get("slot_rotated")
    monkeypatch.setattr(plans_grid, "memory_budget_bytes", lambda: slot_rotated_transfers((4, 2), False) * 199)
    result = simulate("all-to-all", float(1 << 20), topo, "direct", mode="event")
    assert result.verified and not result.schedule.notes.get("slot_rotated")
    assert result.time_s > fits.time_s * (1 + 1e-3)
