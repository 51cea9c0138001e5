"""Invariants of the collective cost model (hypothesis): monotone in M, never below the lower bound, torus
never slower than the mesh of the same shape, N = 1 costs 0, auto = min over all, arrays = scalars."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from distcalc.collective import (
    Algorithm, CollectiveKind, collective_cost, collective_costs, lower_bound, valid_algorithms,
)
from distcalc.p2p import send_recv_cost
from distcalc.topology import TopologyKind, make_topology, most_square_shape

SETTINGS = settings(max_examples=60, deadline=None)
KINDS = st.sampled_from(list(CollectiveKind))
SIZES = st.integers(min_value=1, max_value=2**34)
# NCCL's own tree model multiplies bandwidth by a size-dependent, non-monotone correction table
# (tuning.cc treeCorrectionFactor), so its time is not monotone in M by design.
NOT_MONOTONE = {Algorithm.NCCL_TREE}


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@st.composite
def topologies(draw, kinds=tuple(TopologyKind), max_gpus: int = 96):
    kind = draw(st.sampled_from(kinds))
    n = draw(st.integers(min_value=1, max_value=max_gpus))
    b = draw(st.sampled_from([25e9, 100e9, 450e9]))
    a = draw(st.sampled_from([0.0, 1e-6, 5e-6]))
    if kind == TopologyKind.HIERARCHICAL:
        g = draw(st.sampled_from(_divisors(n)))
        return make_topology(kind, n, b, a, gpus_per_node=g, inter_bandwidth_bytes_per_s=draw(
            st.sampled_from([12.5e9, 50e9, 900e9])), inter_latency_s=draw(st.sampled_from([1e-6, 5e-6])))
    if kind == TopologyKind.TREE:
        return make_topology(kind, n, b, a, gpus_per_node=draw(st.sampled_from(_divisors(n))),
                             oversubscription=draw(st.sampled_from([1.0, 2.0, 4.0])))
    if kind in (TopologyKind.MESH, TopologyKind.TORUS):
        shape = most_square_shape(n, draw(st.sampled_from([1, 2, 3])))
        return make_topology(kind, n, b, a, shape=shape)
    if kind == TopologyKind.SWITCH:
        return make_topology(kind, n, b, a, in_network_reduction=draw(st.booleans()))
    return make_topology(kind, n, b, a)


@SETTINGS
@given(topo=topologies(), kind=KINDS, m1=SIZES, m2=SIZES)
def test_monotone_in_size(topo, kind, m1, m2):
    small, large = sorted((m1, m2))
    for algorithm in valid_algorithms(kind, topo):
        if algorithm in NOT_MONOTONE:
            continue
        a, b = collective_cost(kind, small, topo, algorithm), collective_cost(kind, large, topo, algorithm)
        assert a.time_s <= b.time_s * (1 + 1e-12), algorithm
        assert a.bytes_sent_per_gpu <= b.bytes_sent_per_gpu * (1 + 1e-12), algorithm


@SETTINGS
@given(topo=topologies(), kind=KINDS, m=SIZES)
def test_never_below_lower_bound(topo, kind, m):
    bound = lower_bound(kind, m, topo).time_s
    for cost in collective_costs(kind, m, topo):
        assert cost.time_s >= bound * (1 - 1e-12), (cost.algorithm, cost.time_s, bound)


@SETTINGS
@given(n=st.integers(min_value=2, max_value=144), ndims=st.sampled_from([1, 2, 3]), kind=KINDS, m=SIZES,
       a=st.sampled_from([0.0, 5e-6]))
def test_torus_never_slower_than_mesh(n, ndims, kind, m, a):
    shape = most_square_shape(n, ndims)
    torus = make_topology("torus", n, 100e9, a, shape=shape)
    mesh = make_topology("mesh", n, 100e9, a, shape=shape)
    assert collective_cost(kind, m, torus).time_s <= collective_cost(kind, m, mesh).time_s * (1 + 1e-12)


@SETTINGS
@given(topo=topologies(max_gpus=1), kind=KINDS, m=SIZES)
def test_one_gpu_costs_nothing(topo, kind, m):
    for cost in collective_costs(kind, m, topo):
        assert cost.time_s == 0 and cost.steps == 0 and cost.bytes_sent_per_gpu == 0
    assert send_recv_cost(m, topo).time_s == 0


@SETTINGS
@given(topo=topologies(), kind=KINDS, m=SIZES)
def test_auto_is_min_over_all(topo, kind, m):
    best = collective_cost(kind, m, topo, "auto")
    every = collective_costs(kind, m, topo)
    assert best.time_s == min(c.time_s for c in every)
    assert best.algorithm == every[0].algorithm
    assert [c.time_s for c in every] == sorted(c.time_s for c in every)


@SETTINGS
@given(topo=topologies(), kind=KINDS, sizes=st.lists(SIZES, min_size=1, max_size=6))
def test_arrays_match_scalars(topo, kind, sizes):
    auto = collective_cost(kind, np.array(sizes), topo)
    for i, m in enumerate(sizes):
        scalar = collective_cost(kind, m, topo)
        assert auto.time_s[i] == pytest.approx(scalar.time_s, rel=1e-12, abs=0)
        assert auto.steps[i] == scalar.steps
        assert auto.algorithm[i] == scalar.algorithm or math.isclose(
            collective_cost(kind, m, topo, auto.algorithm[i]).time_s, scalar.time_s, rel_tol=1e-12)


def test_non_power_of_two_penalties():
    """Spec §4.7: folding to p' costs +2α+2M/B for Rabenseifner (RS/AG then run on p' ranks); Bruck/ring take
    any N. Non-power-of-two values agree with the executed schedules (simulator notes 1, 3, 4)."""
    m, b, a = 2.0**30, 1e11, 5e-6
    six, eight = make_topology("switch", 6, b, a), make_topology("switch", 8, b, a)
    rab6 = collective_cost("all-reduce", m, six, "rabenseifner")
    assert rab6.steps == 2 * 2 + 2 and rab6.bandwidth_term_s == pytest.approx((2 * 3 / 4 + 2) * m / b)
    halving6 = collective_cost("reduce-scatter", m, six, "recursive-halving")  # fold M, 3 + 1 + 2 shards, 1 back
    assert halving6.bandwidth_term_s == pytest.approx((1 + (3 + 1 + 2 + 1) / 6) * m / b)
    assert collective_cost("all-to-all", m, six, "bruck").bandwidth_term_s == pytest.approx(7 / 6 * m / b)
    assert collective_cost("all-gather", m, six, "bruck").steps == 3
    assert Algorithm.RECURSIVE_DOUBLING not in valid_algorithms("all-gather", six)
    assert Algorithm.RECURSIVE_DOUBLING in valid_algorithms("all-gather", eight)


def test_mesh_without_hamiltonian_cycle_has_no_snake():
    odd = make_topology("mesh", 15, shape=(5, 3))
    line = make_topology("mesh", 4, shape=(4, 1))
    even = make_topology("mesh", 12, shape=(4, 3))
    assert Algorithm.SNAKE_RING not in valid_algorithms("all-reduce", odd)
    assert Algorithm.SNAKE_RING not in valid_algorithms("all-reduce", line)
    assert Algorithm.SNAKE_RING in valid_algorithms("all-reduce", even)
    # torus dimension of size 2: one link per direction, no bidirectional gain (spec A7)
    two = make_topology("torus", 2, 1e11, 5e-6, shape=(2, 1))
    assert collective_cost("all-reduce", 2**20, two, "dim-sequential").bandwidth_term_s == pytest.approx(2**20 / 1e11)


def test_seed_api_names():
    from distcalc import CollectiveKind as SeedKind, collective_latency_and_volume

    topo = make_topology("switch", 8, 1e11, 5e-6)
    cost = collective_latency_and_volume(SeedKind.ALL_REDUCE, 1 << 30, topo, "binomial-tree")
    assert cost.latency == pytest.approx(2 * 3 * (5e-6 + 2**30 / 1e11))  # seed Tree: 2⌈log2 N⌉(M/B + α)
    assert cost.volume == cost.bytes_sent_per_gpu and cost.steps == 6
    assert collective_cost("all-reduce", 1 << 30, topo, "tree").time_s == cost.latency  # seed alias


def _grid_topologies():
    for n in (2, 3, 5, 6, 8, 12, 16, 64):
        yield make_topology("switch", n, 1e11, 5e-6, in_network_reduction=True)
        yield make_topology("ring", n, 1e11, 5e-6)
        for ndims in (1, 2, 3):
            yield make_topology("torus", n, 1e11, 5e-6, shape=most_square_shape(n, ndims))
            yield make_topology("mesh", n, 1e11, 5e-6, shape=most_square_shape(n, ndims))
        for g in _divisors(n):
            yield make_topology("hierarchical", n, 4.5e11, 1e-6, gpus_per_node=g,
                                inter_bandwidth_bytes_per_s=5e10, inter_latency_s=5e-6)
            yield make_topology("tree", n, 1e11, 5e-6, gpus_per_node=g, oversubscription=4.0)


GRID = list(_grid_topologies())


@pytest.mark.parametrize("kind", list(CollectiveKind), ids=lambda k: k.value)
def test_lower_bound_and_monotone_on_a_fixed_grid(kind):
    """Deterministic sweep (every topology family, N with and without powers of two, every algorithm)."""
    sizes = [1, 4096, 2**20, 2**30, 2**30 + 1]
    for topo in GRID:
        previous = None
        for m in sizes:
            costs = {c.algorithm: c for c in collective_costs(kind, m, topo)}
            bound = lower_bound(kind, m, topo).time_s
            for algorithm, cost in costs.items():
                assert cost.time_s >= bound * (1 - 1e-12), (topo.kind, topo.gpus, algorithm)
                assert cost.time_s == pytest.approx(cost.latency_term_s + cost.bandwidth_term_s, rel=1e-12)
                if previous is not None and algorithm not in NOT_MONOTONE:
                    assert cost.time_s >= previous[algorithm].time_s * (1 - 1e-12), (topo.kind, algorithm)
            previous = costs
