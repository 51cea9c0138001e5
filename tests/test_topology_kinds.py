"""The registered traits of each topology kind say what the built topology is: the code that reads a trait
instead of a list of kinds stays right only if every trait matches the kind's links and its options."""

from __future__ import annotations

import pytest

from distcalc.errors import TopologyError
from distcalc.topology import KINDS, LinkTier, TopologyKind, kind_traits, make_topology
from distcalc.topology.kinds import kinds_with


def _built(kind: TopologyKind, gpus: int = 12):
    traits = kind_traits(kind)
    extra = {"gpus_per_node": 4} if traits.node_option else {}
    if traits.shaped:
        extra["shape"] = (4, 3)
    return make_topology(kind, gpus, **extra)


def test_every_kind_is_registered_once_in_enum_order():
    assert tuple(KINDS) == tuple(TopologyKind)
    assert all(KINDS[kind].kind is kind and KINDS[kind].description for kind in TopologyKind)


@pytest.mark.parametrize("kind", list(TopologyKind))
def test_direct_means_gpu_to_gpu_links_only(kind):
    links = _built(kind).links()
    assert links
    gpu_to_gpu = all(isinstance(link.src, int) and isinstance(link.dst, int) for link in links)
    assert kind_traits(kind).direct == gpu_to_gpu
    assert kind_traits(kind).direct == all(link.tier == LinkTier.DIRECT for link in links)


@pytest.mark.parametrize("kind", [k for k in TopologyKind if kind_traits(k).direct])
def test_wraparound_means_the_last_gpu_of_a_dimension_neighbours_the_first(kind):
    topo = _built(kind)
    last = topo.rank_of([size - 1 if axis == 0 else 0 for axis, size in enumerate(topo.shape)])
    assert kind_traits(kind).wraparound == (0 in topo.neighbours(last))


@pytest.mark.parametrize("kind", list(TopologyKind))
def test_the_options_a_kind_takes_are_its_traits(kind):
    traits = kind_traits(kind)

    def accepts(**options) -> bool:
        try:
            make_topology(kind, 16, **options)
        except TopologyError:
            return False
        return True

    assert accepts(shape=(4, 4)) == traits.shaped
    assert accepts(gpus_per_node=4) == bool(traits.node_option)
    assert accepts(inter_bandwidth_bytes_per_s=50e9) == traits.two_tier
    assert accepts(in_network_reduction=True) == traits.in_network_reduction


def test_messages_name_the_kinds_with_a_trait():
    assert kinds_with("shaped") == "mesh and torus"
    assert kinds_with("node_option") == "hierarchical and tree"
    assert kinds_with("direct") == "mesh, ring and torus"
    with pytest.raises(TopologyError, match="applies only to mesh and torus, not ring"):
        make_topology("ring", 8, shape=(2, 4))
