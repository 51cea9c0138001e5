"""Event timing with independent channels (issue 18, rail-aligned rings): per-(link, channel) queues, α in flight.

The H02 schedule is g rings, one NCCL channel each. Timed with one Hockney queue per link (the default event
mode) every step pays α2: the ring's NIC queue serves its 2(N − 1) messages one after another at α2 + b/B2
each, and the rings that share a GPU's NVSwitch port wait for each other in step order. With a queue per
(link, ring) and α as in-flight latency, the latency-critical path is one chunk's walk around its ring:
2n inter-node hops (for AllReduce; n for ReduceScatter/AllGather) and α1 on the rest — NCCL's own
nInterSteps = 2·nNodes for AllReduce (tuning.cc, v2.18.5-1/v2.20.5-1, as ``collective.nccl_tuner._steps``).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.simulate import simulate
from distcalc.simulate.events import time_events
from distcalc.simulate.plans_grid import rail_ring_channels
from distcalc.topology import make_topology

A1, A2 = 1e-6, 5e-6
HIER = dict(bandwidth_bytes_per_s=450e9, latency_s=A1, inter_bandwidth_bytes_per_s=50e9, inter_latency_s=A2)
TWO_LEVEL = [(2, 2), (4, 2), (2, 3), (4, 3), (3, 4), (8, 2), (8, 8)]
KINDS = ["all-reduce", "reduce-scatter", "all-gather"]
REL = 1e-9


def _run(g: int, nodes: int, kind: str, size_bytes: float):
    """(simulation in event mode, its timing with one Hockney queue per link, its timing with channels)."""
    topo = make_topology("hierarchical", g * nodes, gpus_per_node=g, **HIER)
    result = simulate(kind, size_bytes, topo, "rail-ring", verify=False, mode="event")
    hockney = time_events(result.schedule, topo)
    channels = time_events(result.schedule, topo, rail_ring_channels(result.schedule.chunk, g))
    return result, hockney, channels


def _h02(result):
    """The library's H02 (the spec beside the schedule's own channel form, where there is one)."""
    return result.spec if result.spec is not None else result.analytic


def test_event_mode_runs_rail_rings_as_channels():
    result, _, channels = _run(4, 3, "all-reduce", float(1 << 20))
    assert result.schedule.notes["ring_channels"] == 4
    assert result.time_s == channels.time_s
    assert result.timing.latency_term_s == channels.latency_term_s


@pytest.mark.parametrize("g,nodes", TWO_LEVEL)
@pytest.mark.parametrize("kind", KINDS)
def test_latency_path_crosses_the_network_once_per_node_and_phase(g, nodes, kind):
    """At 1 MiB the α part of the critical path is one chunk's walk: phases·n hops at α2, the rest at α1."""
    result, hockney, channels = _run(g, nodes, kind, float(1 << 20))
    phases, n = (2 if kind == "all-reduce" else 1), g * nodes
    inter = phases * nodes
    assert channels.latency_term_s == pytest.approx(inter * A2 + (phases * (n - 1) - inter) * A1, rel=REL)
    # one Hockney queue per link: α2 on every step (the disagreement this mode explains)
    assert hockney.latency_term_s == pytest.approx(result.steps * A2, rel=REL)
    assert hockney.bandwidth_term_s == pytest.approx(_h02(result).bandwidth_term_s, rel=REL)
    assert channels.time_s < hockney.time_s


@pytest.mark.parametrize("g,nodes", TWO_LEVEL)
@pytest.mark.parametrize("kind", KINDS)
def test_bandwidth_bound_ring_has_the_formula_bandwidth_and_one_network_alpha_per_phase(g, nodes, kind):
    """At 1 GB the busiest queue's serialisation is H02's bandwidth term exactly; H02 (α of a walk added to
    the busiest link's time) is then above the executed schedule, whose α is one inter-node α per phase."""
    result, _, channels = _run(g, nodes, kind, 1e9)
    phases = 2 if kind == "all-reduce" else 1
    assert channels.bandwidth_term_s == pytest.approx(_h02(result).bandwidth_term_s, rel=REL)
    assert channels.latency_term_s == pytest.approx(phases * A2, rel=REL)
    assert channels.time_s <= _h02(result).time_s


@pytest.mark.parametrize("g,nodes", [(8, 1), (1, 4), (1, 1)])
@pytest.mark.parametrize("kind", KINDS)
def test_one_hop_class_is_the_same_in_both_modes(g, nodes, kind):
    """One link class: a chunk's walk and the busiest queue collect the same α per step, so channels change
    nothing (and both equal H02 exactly)."""
    result, hockney, channels = _run(g, nodes, kind, float(1 << 20))
    assert channels.time_s == pytest.approx(hockney.time_s, rel=REL, abs=1e-15)
    assert channels.latency_term_s == pytest.approx(hockney.latency_term_s, rel=REL, abs=1e-15)
    assert channels.time_s == pytest.approx(result.analytic.time_s, rel=REL, abs=1e-15)


def test_link_bytes_are_the_same_in_both_modes():
    _, hockney, channels = _run(4, 3, "all-reduce", float(1 << 20))
    assert np.allclose(channels.link_bytes, hockney.link_bytes)
    assert np.allclose(channels.step_max_link_bytes, hockney.step_max_link_bytes)


def test_channel_ids_must_cover_every_row():
    topo = make_topology("hierarchical", 8, gpus_per_node=4, **HIER)
    schedule = simulate("all-reduce", 1e6, topo, "rail-ring", verify=False, mode="event").schedule
    with pytest.raises(ValueError, match="one per row"):
        time_events(schedule, topo, np.zeros(3, dtype=int))
    with pytest.raises(ValueError, match="non-negative"):
        time_events(schedule, topo, -np.ones(schedule.src.size, dtype=int))


@settings(max_examples=30, deadline=None)
@given(g=st.integers(2, 6), nodes=st.integers(2, 5), size_bytes=st.floats(1e3, 1e9),
       kind=st.sampled_from(KINDS))
def test_channel_time_lies_between_the_busiest_queue_and_the_additive_walk(g, nodes, kind, size_bytes):
    """Any path of the event DAG collects at most every step's largest service and at most one walk's α; the
    busiest (link, ring) queue alone serves a message every step: so H02's bandwidth term + α1 ≤ T ≤ H02's
    bandwidth term + the walk's α, and never above one Hockney queue per link."""
    result, hockney, channels = _run(g, nodes, kind, size_bytes)
    phases, n = (2 if kind == "all-reduce" else 1), g * nodes
    inter = phases * nodes
    walk = inter * A2 + (phases * (n - 1) - inter) * A1
    bandwidth = _h02(result).bandwidth_term_s
    assert bandwidth + A1 <= channels.time_s * (1 + REL)
    assert channels.time_s <= (bandwidth + walk) * (1 + REL)
    assert channels.time_s <= hockney.time_s * (1 + REL)
    # the schedule's own closed form (collective.hierarchical.rail_ring_channels_phase) in time and α
    assert result.analytic.formula_id == _h02(result).formula_id + "-channels"
    assert channels.time_s == pytest.approx(result.analytic.time_s, rel=REL)
    assert channels.latency_term_s == pytest.approx(result.analytic.latency_term_s, rel=REL)
