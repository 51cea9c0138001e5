"""Route every transfer of a schedule over the topology's physical links and load the links.

Each distinct (src, dst) pair is routed once with :meth:`Topology.route` (shortest path; dimension order on
torus/mesh; GPU→switch→GPU on a switch; NVSwitch or NIC rail on hierarchical clusters). Transfers to or from
an extra compute node of the schedule (the in-network-reducing switch) use the direct GPU↔switch link.

Latency of a transfer (docs/spec/collectives.md §1, §4.9; :mod:`distcalc.topology`): the α of the slowest network
tier it crosses (α on ring/mesh/torus/switch/tree; α1 inside a node, α2 across nodes on hierarchical), plus
``hop_latency_s`` for every further GPU it is forwarded through (F27: α + (h−1)·α_hop). Links into a switch
carry α/2 in :class:`distcalc.topology.Link`, so a link's tier latency is 2× its value there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from distcalc.simulate.schedule import Schedule
from distcalc.topology import Link, LinkTier, Topology, TopologyKind

_SWITCHED = (LinkTier.SWITCH, LinkTier.INTRA, LinkTier.INTER)


@dataclass
class LinkLoads:
    """Per-step, per-link bytes of a routed schedule.

    ``loads[s, l]`` is the bytes crossing directed link ``links[l]`` in step ``s``;
    ``step_latency_s[s]`` the α of step ``s``.
    """

    links: list[Link]
    loads: np.ndarray
    step_latency_s: np.ndarray
    bandwidth_bytes_per_s: np.ndarray
    sent_bytes_per_node: np.ndarray


def _link_step_latency(link: Link) -> float:
    return link.latency_s * (2.0 if link.tier in _SWITCHED else 1.0)


class Router:
    """Routes (src, dst) node pairs of a schedule on a topology, caching each pair's links."""

    def __init__(self, topo: Topology, extra_nodes: tuple[str, ...] = ()):
        self.topo = topo
        self.links = topo.links()
        self.index = {(lk.src, lk.dst): i for i, lk in enumerate(self.links)}
        self.extra_nodes = extra_nodes
        self._cache: dict[tuple[int, int], tuple[np.ndarray, float]] = {}

    def _node(self, node: int):
        return node if node < self.topo.gpus else self.extra_nodes[node - self.topo.gpus]

    def route(self, src: int, dst: int, tie: int = 0) -> tuple[np.ndarray, float]:
        """(link indices, latency in s) of the path src → dst (``tie`` = 1: ring/torus ties go −)."""
        key = (src, dst, tie)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        if src < self.topo.gpus and dst < self.topo.gpus:
            path = self._minus_tie_route(src, dst) if tie else None
            path = path or self.topo.route(src, dst)
        else:
            path = [self.topo.link(self._node(src), self._node(dst))]
        idx = np.array([self.index[(lk.src, lk.dst)] for lk in path], dtype=np.int64)
        forwards = sum(1 for lk in path[:-1] if isinstance(lk.dst, int))  # GPUs the data passes through
        latency = max((_link_step_latency(lk) for lk in path), default=0.0) + forwards * self.topo.hop_latency_s
        self._cache[key] = (idx, latency)
        return idx, latency


    def _minus_tie_route(self, src: int, dst: int) -> list[Link] | None:
        """Dimension-order shortest path that goes − where both directions are shortest (ring/torus only)."""
        topo = self.topo
        if topo.kind not in (TopologyKind.RING, TopologyKind.TORUS):
            return None
        coords, target = list(topo.coords(src)), topo.coords(dst)
        nodes = [src]
        for axis, size in enumerate(topo.shape or ()):
            forward = (target[axis] - coords[axis]) % size
            step = -1 if 2 * forward == size or 2 * forward > size else 1
            while coords[axis] != target[axis]:
                coords[axis] = (coords[axis] + step) % size
                nodes.append(topo.rank_of(coords))
        return [topo.link(a, b) for a, b in zip(nodes, nodes[1:])]


def _pair_routes(router: Router, pairs: np.ndarray, nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(links per route, concatenated link indices, latency) of every distinct pair key ``(src·nodes + dst)·2
    + tie``. GPU pairs on a switch are GPU→switch→GPU, built as arrays (an All-to-All on 1,024 ranks has a
    million pairs); every other route goes through :meth:`Router.route`."""
    topo = router.topo
    src, dst = pairs // 2 // nodes, pairs // 2 % nodes
    if topo.kind == TopologyKind.SWITCH and pairs.size and src.max() < topo.gpus and dst.max() < topo.gpus:
        up = np.array([router.index[(r, "switch")] for r in range(topo.gpus)], dtype=np.int64)
        down = np.array([router.index[("switch", r)] for r in range(topo.gpus)], dtype=np.int64)
        link_latency = np.array([_link_step_latency(lk) for lk in router.links])
        hops = np.stack([up[src], down[dst]], axis=1)
        return (np.full(pairs.size, 2, dtype=np.int64), hops.ravel(),
                np.maximum(link_latency[hops[:, 0]], link_latency[hops[:, 1]]))
    routes = [router.route(int(a), int(b), int(t)) for a, b, t in zip(src, dst, pairs % 2)]
    return (np.array([r[0].size for r in routes], dtype=np.int64), np.concatenate([r[0] for r in routes]),
            np.array([r[1] for r in routes]))


@dataclass
class RowRoutes:
    """The route of every row of a schedule, by distinct (src, dst, tie) pair: row ``r`` takes pair
    ``pair_of_row[r]``, whose links are ``flat[ptr[p]:ptr[p + 1]]`` (``lengths[p]`` of them) and whose
    latency is ``pair_latency[p]``."""

    links: list[Link]
    bandwidth_bytes_per_s: np.ndarray
    pairs: int
    pair_of_row: np.ndarray
    lengths: np.ndarray
    flat: np.ndarray
    ptr: np.ndarray
    pair_latency: np.ndarray


def row_routes(schedule: Schedule, topo: Topology) -> RowRoutes:
    """Route every distinct (src, dst, tie) pair of ``schedule`` once (dense bincount over pair ids < nodes²)."""
    router = Router(topo, schedule.extra_nodes)
    nodes = schedule.nodes
    bandwidth = np.array([lk.bandwidth_bytes_per_s for lk in router.links], dtype=float)
    tie = schedule.tie if schedule.tie is not None else np.zeros_like(schedule.src)
    pair = (schedule.src.astype(np.int64) * nodes + schedule.dst) * 2 + (tie != 0)
    present = np.bincount(pair, minlength=2 * nodes * nodes) > 0
    pairs = np.flatnonzero(present)
    compact = np.cumsum(present) - 1
    lengths, flat, pair_latency = _pair_routes(router, pairs, nodes) if pairs.size else (
        np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return RowRoutes(router.links, bandwidth, int(pairs.size), compact[pair], lengths, flat, ptr, pair_latency)


def route_schedule(schedule: Schedule, topo: Topology) -> LinkLoads:
    """Bytes per (step, link), α per step, and bytes sent per node, fully vectorised over transfers."""
    nodes, steps = schedule.nodes, schedule.steps
    sent = np.bincount(schedule.src, minlength=nodes).astype(float) * schedule.chunk_bytes
    if steps == 0:
        router = Router(topo, schedule.extra_nodes)
        bandwidth = np.array([lk.bandwidth_bytes_per_s for lk in router.links], dtype=float)
        return LinkLoads(router.links, np.zeros((0, len(router.links))), np.zeros(0), bandwidth, sent)
    routes = row_routes(schedule, topo)
    bandwidth, n_links = routes.bandwidth_bytes_per_s, len(routes.links)
    # aggregate transfers to (step, pair) first: rows of one pair in one step share a route. Dense
    # bincounts instead of sorting: (step, pair) keys < steps · distinct pairs.
    key = schedule.step_of_row().astype(np.int64) * routes.pairs + routes.pair_of_row
    per_key = np.bincount(key, minlength=steps * routes.pairs)
    keys = np.flatnonzero(per_key)
    count = per_key[keys]
    key_step, key_pair = np.divmod(keys, routes.pairs)
    lengths, flat, pair_latency, ptr = routes.lengths, routes.flat, routes.pair_latency, routes.ptr
    weights = count * schedule.chunk_bytes
    if lengths.size and np.all(lengths == lengths[0]):
        # every route has the same number of links (switch: 2, neighbour rings: 1): add each link position
        # of the routes in turn, without expanding the (step, pair) entries
        hops = flat.reshape(lengths.size, int(lengths[0]))
        base = key_step * n_links
        loads = np.bincount(base + hops[key_pair, 0], weights=weights, minlength=steps * n_links)
        for position in range(1, hops.shape[1]):
            loads += np.bincount(base + hops[key_pair, position], weights=weights, minlength=steps * n_links)
        loads = loads.reshape(steps, n_links)
    else:  # expand every (step, pair) to its links
        reps = lengths[key_pair]
        entry_step = np.repeat(key_step, reps)
        entry_bytes = np.repeat(weights, reps)
        offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
        entry_link = flat[np.repeat(ptr[key_pair], reps) + offsets]
        loads = np.bincount(entry_step * n_links + entry_link, weights=entry_bytes,
                            minlength=steps * n_links).reshape(steps, n_links)
    step_latency = np.zeros(steps)
    np.maximum.at(step_latency, key_step, pair_latency[key_pair])
    return LinkLoads(routes.links, loads, step_latency, bandwidth, sent)
