"""Network topologies that collectives run on: ring, tree, switch, hierarchical, mesh, torus.

Conventions (docs/design.md §2, docs/spec/collectives.md §4):

* ``bandwidth_bytes_per_s`` (B) is per link, **per direction**; every link is full duplex and is listed
  once per direction by :meth:`Topology.links`.
* ``latency_s`` (α) is the fixed cost of one communication *step* (startup plus one hop, cut-through).
  The collective cost model charges α per step whatever the hop count (spec A9). Per-link latencies in
  :class:`Link` split α over the links of one switch traversal (α/2 GPU→switch, α/2 switch→GPU) so that a
  one-step route sums to α; on direct-connect topologies (ring, mesh, torus) each link carries α.
  ``hop_latency_s`` (default 0, cut-through) is the extra latency per additional hop used by point-to-point
  costs over several hops (spec F27).

Node identifiers returned by :meth:`Topology.links`, :meth:`Topology.route` and :meth:`Topology.neighbours`:

* GPUs are the ints ``0 .. gpus-1`` (the ranks).
* ``"switch"``: the single crossbar of a ``SWITCH`` topology.
* ``("leaf", i)`` and ``"spine"``: leaf switch *i* and the spine of a ``TREE`` (leaf-spine fat tree).
* ``("nvswitch", node)``: the intra-node NVLink switch of node *node* in a ``HIERARCHICAL`` topology.
* ``("rail", j)``: the inter-node rail switch that the NIC of local GPU *j* of every node plugs into
  (rail-optimised network, one NIC per GPU); the rail switches hang off one non-blocking ``"spine"``
  (uplink ``n·B2`` per direction), so a NIC reaches every remote GPU without crossing NVLink (spec H06).

Rank layout: mesh/torus rank ``r`` has coordinates ``(x0, x1, x2)`` with dimension 0 varying fastest
(``r = x0 + n0·(x1 + n1·x2)``); hierarchical rank ``r`` is local GPU ``r % g`` of node ``r // g``; tree rank
``r`` sits on leaf ``r // gpus_per_leaf`` (leaf-contiguous, spec A12).

Topology kinds:

* ``RING``: a physical ring, two neighbour links per GPU (a 1D torus). N = 2 has a single link pair.
* ``TREE``: a two-level leaf-spine fat tree: one link of B per GPU to its leaf switch
  (``gpus_per_node`` = GPUs per leaf, default 32 or N if smaller), leaf uplinks of total
  ``gpus_per_leaf·B/oversubscription`` per direction. ``oversubscription = 1`` is the ideal switch.
  Any N ≥ 1: when the leaf size does not divide N the last leaf is partly filled (⌈N/n_l⌉ leaves, the last
  with N mod n_l GPUs) and keeps the full uplinks; see :func:`distcalc.topology.build.tree_leaf_size`.
* ``SWITCH``: an ideal non-blocking switch, one port of B per GPU; ``in_network_reduction`` models
  NVLS/SHARP.
* ``HIERARCHICAL``: g GPUs per node on an NVLink switch (B1 = ``bandwidth_bytes_per_s``, α1 =
  ``latency_s``), nodes joined by a rail-optimised InfiniBand network with one NIC per GPU (B2 =
  ``inter_bandwidth_bytes_per_s``, α2 = ``inter_latency_s``).
* ``MESH``: 2D/3D grid without wraparound. ``TORUS``: 1D/2D/3D with wraparound. A dimension of size 2 has
  one link per direction (both neighbours are the same GPU); size 1 is absent (docs/spec/collectives.md §4.4).
"""


from distcalc.topology.build import TopologySpec, make_topology
from distcalc.topology.graph import Topology
from distcalc.topology.kinds import KINDS, KindTraits, TopologyKind, kind_traits
from distcalc.topology.model import DEFAULT_GPUS_PER_LEAF, Link, LinkTier, NodeId, most_square_shape, parse_shape

__all__ = [
    "DEFAULT_GPUS_PER_LEAF", "KINDS", "KindTraits", "Link", "LinkTier", "NodeId", "Topology", "TopologyKind",
    "TopologySpec", "kind_traits", "make_topology", "most_square_shape", "parse_shape",
]
