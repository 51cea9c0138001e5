"""A built topology: the :class:`~distcalc.topology.model.TopologyLayout` with its physical links and
shortest-path routes (:mod:`distcalc.topology.wiring`). Create with :func:`~distcalc.topology.make_topology`."""

from __future__ import annotations

import functools

from distcalc.errors import TopologyError
from distcalc.topology.model import Link, NodeId, TopologyLayout
from distcalc.topology.wiring import build_links, route_nodes


class Topology(TopologyLayout):
    """A built topology. Create with :func:`~distcalc.topology.make_topology` (which validates); fields carry
    units (see :class:`~distcalc.topology.model.TopologyLayout`)."""

    # ----------------------------------------------------------------- links
    def links(self) -> list[Link]:
        """Every directed physical link (full-duplex wires appear once per direction)."""
        return list(_shared_link_map(self).values())

    def _link_map(self) -> dict[tuple[NodeId, NodeId], Link]:
        if "link_map" not in self._cache:
            self._cache["link_map"] = _shared_link_map(self)
        return self._cache["link_map"]

    def link(self, src: NodeId, dst: NodeId) -> Link:
        """The directed link src→dst (raises :class:`TopologyError` if there is none)."""
        try:
            return self._link_map()[(src, dst)]
        except KeyError:
            raise TopologyError(f"no link {src!r} -> {dst!r} in this {self.kind.value} topology") from None

    def neighbours(self, rank: int) -> list[NodeId]:
        """Nodes directly wired to ``rank`` (GPUs on direct-connect topologies, switch ids otherwise)."""
        self._check_rank(rank)
        seen: list[NodeId] = []
        for (src, dst) in self._link_map():
            if src == rank and dst not in seen:
                seen.append(dst)
        return seen

    # ----------------------------------------------------------------- routing
    def route(self, src: int, dst: int) -> list[Link]:
        """Shortest path src→dst as a list of links. Torus/mesh/ring: dimension order (dimension 0 first),
        shortest direction per dimension (ties go +). Switch: GPU→switch→GPU. Tree: GPU→leaf(→spine→leaf)→GPU.
        Hierarchical: same node GPU→nvswitch→GPU; same local index GPU→rail→GPU; otherwise
        GPU→rail(source's local index)→spine→rail(destination's local index)→GPU (NVLink is not used)."""
        self._check_rank(src)
        self._check_rank(dst)
        if src == dst:
            return []
        path = route_nodes(self, src, dst)
        return [self.link(a, b) for a, b in zip(path, path[1:])]

    def hop_distance(self, a: int, b: int) -> int:
        """Number of links on :meth:`route` from a to b."""
        return len(self.route(a, b))


@functools.lru_cache(maxsize=128)
def _shared_link_map(topo: Topology) -> dict[tuple[NodeId, NodeId], Link]:
    """Links of a topology keyed by (src, dst), built once per distinct topology: equal topologies (a search
    builds the same group topology for thousands of configurations) share one map. Treat as read-only."""
    return {(link.src, link.dst): link for link in build_links(topo)}
