"""Topology construction, links, routes, distances and bisection (distcalc.topology)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from distcalc.errors import TopologyError
from distcalc.topology import LinkTier, TopologyKind, make_topology, most_square_shape, parse_shape


@pytest.mark.parametrize("n, ndims, expected", [
    (2, 2, (2, 1)), (8, 2, (4, 2)), (64, 2, (8, 8)), (1024, 2, (32, 32)), (7, 2, (7, 1)), (12, 2, (4, 3)),
    (8, 3, (2, 2, 2)), (64, 3, (4, 4, 4)), (1024, 3, (16, 8, 8)), (2, 3, (2, 1, 1)), (12, 3, (3, 2, 2)),
])
def test_most_square_shape(n, ndims, expected):
    assert most_square_shape(n, ndims) == expected


def _topologies(n: int):
    yield make_topology("ring", n)
    yield make_topology("switch", n)
    yield make_topology("tree", n, gpus_per_node=min(4, n) if n % min(4, n) == 0 else 1, oversubscription=2)
    for ndims in (1, 2, 3):
        yield make_topology("torus", n, shape=most_square_shape(n, ndims))
        yield make_topology("mesh", n, shape=most_square_shape(n, ndims))
    for g in (d for d in range(1, n + 1) if n % d == 0):
        yield make_topology("hierarchical", n, 450e9, 1e-6, gpus_per_node=g, inter_bandwidth_bytes_per_s=50e9)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(min_value=1, max_value=24))
def test_routes_are_valid_paths_and_diameter_is_max_distance(n):
    for topo in _topologies(n):
        links = topo.links()
        pairs = {(lk.src, lk.dst): lk for lk in links}
        for lk in links:  # full duplex: every wire appears in both directions with the same bandwidth
            assert pairs[(lk.dst, lk.src)].bandwidth_bytes_per_s == lk.bandwidth_bytes_per_s
        worst = 0
        for a, b in itertools.product(range(n), repeat=2):
            route = topo.route(a, b)
            assert len(route) == topo.hop_distance(a, b)
            if a == b:
                assert route == []
                continue
            assert route[0].src == a and route[-1].dst == b
            assert all(x.dst == y.src for x, y in zip(route, route[1:]))
            worst = max(worst, len(route))
        assert topo.diameter == worst, (topo.kind, topo.shape, topo.gpus_per_node)


def test_torus_and_mesh_distances():
    torus = make_topology("torus", 64, shape=(8, 8))
    mesh = make_topology("mesh", 64, shape=(8, 8))
    a, b = torus.rank_of((0, 0)), torus.rank_of((7, 5))
    assert torus.hop_distance(a, b) == 1 + 3 and mesh.hop_distance(a, b) == 7 + 5
    assert torus.diameter == 8 and mesh.diameter == 14
    assert len(torus.neighbours(0)) == 4 and len(mesh.neighbours(0)) == 2
    assert len(mesh.neighbours(mesh.rank_of((3, 3)))) == 4
    # a dimension of size 2: both neighbours are the same GPU, one link per direction
    two = make_topology("torus", 8, shape=(4, 2))
    assert sorted(two.neighbours(0)) == [1, 3, 4]
    assert len(make_topology("torus", 8, shape=(2, 2, 2)).links()) == 8 * 3


def test_bisection_bandwidth():
    b = 1e11
    assert make_topology("torus", 64, b, shape=(8, 8)).bisection_bandwidth_bytes_per_s == 2 * 64 / 8 * b
    assert make_topology("mesh", 64, b, shape=(8, 8)).bisection_bandwidth_bytes_per_s == 64 / 8 * b
    assert make_topology("ring", 16, b).bisection_bandwidth_bytes_per_s == 2 * b
    assert make_topology("switch", 16, b).bisection_bandwidth_bytes_per_s == 8 * b
    assert make_topology("tree", 64, b, gpus_per_node=32, oversubscription=4).bisection_bandwidth_bytes_per_s == 8 * b
    hier = make_topology("hierarchical", 64, 4.5e11, gpus_per_node=8, inter_bandwidth_bytes_per_s=5e10)
    assert hier.bisection_bandwidth_bytes_per_s == 32 * 5e10


def test_hierarchical_routes_use_nvswitch_and_rails():
    topo = make_topology("hierarchical", 16, 4.5e11, 1e-6, gpus_per_node=8, inter_bandwidth_bytes_per_s=5e10,
                         inter_latency_s=5e-6)
    intra = topo.route(0, 3)
    assert [lk.tier for lk in intra] == [LinkTier.INTRA, LinkTier.INTRA] and intra[0].dst == ("nvswitch", 0)
    rail = topo.route(2, 10)
    assert [lk.dst for lk in rail] == [("rail", 2), 10] and rail[0].bandwidth_bytes_per_s == 5e10
    cross = topo.route(0, 9)  # different local index: rail 0, spine, rail 1 (NVLink not used, spec H06)
    assert [lk.dst for lk in cross] == [("rail", 0), "spine", ("rail", 1), 9]
    assert sum(lk.latency_s for lk in cross) == pytest.approx(5e-6)
    assert sum(lk.latency_s for lk in rail) == pytest.approx(5e-6)


def test_switch_and_tree_routes():
    switch = make_topology("switch", 4, 1e11, 5e-6)
    assert [lk.dst for lk in switch.route(0, 3)] == ["switch", 3]
    assert sum(lk.latency_s for lk in switch.route(0, 3)) == pytest.approx(5e-6)
    tree = make_topology("tree", 8, 1e11, gpus_per_node=4, oversubscription=2)
    assert [lk.dst for lk in tree.route(0, 5)] == [("leaf", 0), "spine", ("leaf", 1), 5]
    assert tree.link(("leaf", 0), "spine").bandwidth_bytes_per_s == 4 * 1e11 / 2


@pytest.mark.parametrize("kwargs, needle", [
    (dict(kind="mesh", gpus=8, shape="3x3"), "--shape 3x3 has 9 GPUs but --gpus is 8"),
    (dict(kind="torus", gpus=8, shape=(3, 3)), "3x3"),
    (dict(kind="torus", gpus=8, shape="2xfoo"), "2xfoo"),
    (dict(kind="foo", gpus=8), "'foo'"),
    (dict(kind="ring", gpus=0), "--gpus 0"),
    (dict(kind="switch", gpus=8, shape="4x2"), "--shape"),
    (dict(kind="hierarchical", gpus=12, gpus_per_node=8), "multiple"),
    (dict(kind="ring", gpus=8, in_network_reduction=True), "in-network"),
    (dict(kind="switch", gpus=8, bandwidth_bytes_per_s=0), "--bandwidth 0"),
    (dict(kind="switch", gpus=8, latency_s=-1), "-1"),
    (dict(kind="tree", gpus=8, oversubscription=0.5), "0.5"),
])
def test_invalid_topologies_are_refused(kwargs, needle):
    with pytest.raises(TopologyError) as info:
        make_topology(**kwargs)
    assert needle in str(info.value)


def test_parse_shape_and_kinds():
    assert parse_shape("4x4x4") == (4, 4, 4)
    assert {k.value for k in TopologyKind} == {"ring", "tree", "switch", "hierarchical", "mesh", "torus"}
    assert make_topology("torus", 1).links() == [] and make_topology("switch", 1).diameter == 0
    with pytest.raises(TopologyError):
        make_topology("switch", 4).route(0, 4)


def test_topology_spec_model():
    from pydantic import ValidationError

    from distcalc.topology import TopologySpec

    topo = TopologySpec(kind="torus", gpus=16, shape=(4, 4)).build()
    assert topo.shape == (4, 4) and topo.bandwidth_bytes_per_s == 100e9
    with pytest.raises(ValidationError):
        TopologySpec(kind="switch", gpus=0)
    with pytest.raises(TopologyError):
        TopologySpec(kind="mesh", gpus=8, shape=(3, 3)).build()
