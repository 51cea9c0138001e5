"""The topology kinds, each one registered record of what it is (:data:`KINDS`).

A place that needs to know what a kind *is* — whether its GPUs are wired to each other or through switches,
whether its dimensions close on themselves, which options apply to it — reads the kind's
:class:`KindTraits` instead of testing for a list of kinds, so that adding a kind adds one record here
rather than an entry in each of those lists. What each kind's links and routes are stays in
:mod:`distcalc.topology.wiring`; which collective algorithms run on it, in
:mod:`distcalc.collective.registry` (docs/architecture.md §3.1 lists every place a new kind touches).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class TopologyKind(str, enum.Enum):
    """The six topology families (CLI values in lower case)."""

    RING = "ring"
    TREE = "tree"
    SWITCH = "switch"
    HIERARCHICAL = "hierarchical"
    MESH = "mesh"
    TORUS = "torus"


@dataclass(frozen=True)
class KindTraits:
    """What one topology kind is, for the code that branches on it.

    ``direct``: GPUs are wired to each other (no switch): a route is a chain of GPU-to-GPU links, each of
    which carries α, and the links per GPU follow the grid's dimensions. ``wraparound``: every dimension
    closes on itself. ``shaped``: its dimensions are given by ``--shape`` (default most-square).
    ``node_option``: what ``--gpus-per-node`` means on it (``None``: it does not apply). ``two_tier``: a
    second, inter-node link (B2, α2) with its own options. ``in_network_reduction``: the switch may reduce
    in the network (NVLS/SHARP). ``description``: one line for ``distcalc topologies`` and its JSON."""

    kind: TopologyKind
    description: str
    direct: bool = False
    wraparound: bool = False
    shaped: bool = False
    node_option: str | None = None
    two_tier: bool = False
    in_network_reduction: bool = False


#: Every kind's traits, in the enum's order.
KINDS: dict[TopologyKind, KindTraits] = {traits.kind: traits for traits in (
    KindTraits(TopologyKind.RING, "physical ring, two neighbour links per GPU (1D torus)",
               direct=True, wraparound=True),
    KindTraits(TopologyKind.TREE, "leaf-spine fat tree: --gpus-per-node GPUs per leaf (default 32; the last leaf "
                                  "may be partly filled), --oversubscription s:1",
               node_option="GPUs per leaf"),
    KindTraits(TopologyKind.SWITCH, "ideal non-blocking switch, one port of B per GPU (--in-network-reduction: "
                                    "NVLS/SHARP)",
               in_network_reduction=True),
    KindTraits(TopologyKind.HIERARCHICAL, "g GPUs per node on NVLink (B1, α1) + one NIC per GPU on rails (B2, α2)",
               node_option="GPUs per node", two_tier=True),
    KindTraits(TopologyKind.MESH, "2D/3D mesh without wraparound (--shape, default most-square)",
               direct=True, shaped=True),
    KindTraits(TopologyKind.TORUS, "1D/2D/3D torus with wraparound (--shape, default most-square 2D)",
               direct=True, wraparound=True, shaped=True),
)}
assert tuple(KINDS) == tuple(TopologyKind), "every TopologyKind has its traits, in the enum's order"


def kind_traits(kind: TopologyKind) -> KindTraits:
    """The registered traits of ``kind``."""
    return KINDS[kind]


def kinds_with(predicate: str) -> str:
    """The names of the kinds whose trait ``predicate`` is set, for messages: ``mesh and torus``
    (alphabetical)."""
    names = sorted(kind.value for kind, traits in KINDS.items() if getattr(traits, predicate))
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
