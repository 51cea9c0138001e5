"""Physical links and shortest-path routes of each topology kind (node ids: see :mod:`distcalc.topology`)."""

from __future__ import annotations

import functools

from distcalc.topology.kinds import TopologyKind, kind_traits
from distcalc.topology.model import Link, LinkTier, NodeId, TopologyLayout


def build_links(topo: TopologyLayout) -> list[Link]:
    n, bw, lat = topo.gpus, topo.bandwidth_bytes_per_s, topo.latency_s
    links: list[Link] = []
    if n == 1:
        return links
    kind = topo.kind

    def duplex(a: NodeId, b: NodeId, b_bw: float, b_lat: float, tier: LinkTier) -> None:
        links.append(Link(a, b, b_bw, b_lat, tier))
        links.append(Link(b, a, b_bw, b_lat, tier))

    if kind_traits(kind).direct:
        seen: set[tuple[int, int]] = set()
        for rank in range(n):
            for nb in _grid_neighbours(topo, rank):
                if (rank, nb) not in seen:
                    seen.add((rank, nb))
                    links.append(Link(rank, nb, bw, lat, LinkTier.DIRECT))
    elif kind == TopologyKind.SWITCH:
        for rank in range(n):
            duplex(rank, "switch", bw, lat / 2, LinkTier.SWITCH)
    elif kind == TopologyKind.TREE:
        leaf_size = topo.gpus_per_node or n
        for rank in range(n):
            duplex(rank, ("leaf", rank // leaf_size), bw, lat / 2, LinkTier.SWITCH)
        if topo.nodes > 1:
            for leaf in range(topo.nodes):
                duplex(("leaf", leaf), "spine", leaf_size * bw / topo.oversubscription, 0.0, LinkTier.UPLINK)
    else:  # hierarchical
        g = topo.gpus_per_node or n
        for rank in range(n):
            node, local = divmod(rank, g)
            if g > 1:
                duplex(rank, ("nvswitch", node), bw, lat / 2, LinkTier.INTRA)
            if topo.nodes > 1:
                duplex(rank, ("rail", local), float(topo.inter_bandwidth_bytes_per_s),
                       float(topo.inter_latency_s) / 2, LinkTier.INTER)
        if topo.nodes > 1 and g > 1:  # rail switches joined by a non-blocking spine (rail-optimised fat tree)
            for local in range(g):
                duplex(("rail", local), "spine", topo.nodes * float(topo.inter_bandwidth_bytes_per_s), 0.0,
                       LinkTier.UPLINK)
    return links


def _grid_neighbours(topo: TopologyLayout, rank: int) -> list[int]:
    """Direct neighbours on ring/torus/mesh in the order +d0, −d0, +d1, −d1, … (deduplicated)."""
    coords = list(topo.coords(rank))
    out: list[int] = []
    for axis, size in enumerate(topo.shape or ()):
        if size == 1:
            continue
        for step in (1, -1):
            c = coords[axis] + step
            if not topo.wraparound and not 0 <= c < size:
                continue
            moved = list(coords)
            moved[axis] = c % size
            nb = topo.rank_of(moved)
            if nb not in out and nb != rank:
                out.append(nb)
    return out


@functools.lru_cache(maxsize=None)
def _axis_steps(size: int, start: int, end: int, wrap: bool) -> tuple[int, ...]:
    """Coordinates visited moving from start to end along one axis (shortest direction; ties go +)."""
    if start == end:
        return ()
    if wrap:
        forward = (end - start) % size
        step = 1 if forward <= size - forward else -1
    else:
        step = 1 if end > start else -1
    out, c = [], start
    while c != end:
        c = (c + step) % size if wrap else c + step
        out.append(c)
    return tuple(out)


def route_nodes(topo: TopologyLayout, src: int, dst: int) -> list[NodeId]:
    kind = topo.kind
    if kind_traits(kind).direct:
        coords, target = list(topo.coords(src)), topo.coords(dst)
        path: list[NodeId] = [src]
        for axis, size in enumerate(topo.shape or ()):
            for c in _axis_steps(size, coords[axis], target[axis], topo.wraparound):
                coords[axis] = c
                path.append(topo.rank_of(coords))
        return path
    if kind == TopologyKind.SWITCH:
        return [src, "switch", dst]
    if kind == TopologyKind.TREE:
        leaf_size = topo.gpus_per_node or topo.gpus
        a, b = ("leaf", src // leaf_size), ("leaf", dst // leaf_size)
        return [src, a, dst] if a == b else [src, a, "spine", b, dst]
    g = topo.gpus_per_node or topo.gpus
    (node_a, local_a), (node_b, local_b) = divmod(src, g), divmod(dst, g)
    if node_a == node_b:
        return [src, ("nvswitch", node_a), dst]
    if local_a == local_b:
        return [src, ("rail", local_a), dst]
    return [src, ("rail", local_a), "spine", ("rail", local_b), dst]

