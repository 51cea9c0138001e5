"""Collective communication costs (α-β model) on the topologies of :mod:`distcalc.topology`.

Public API (docs/design.md §3)::

    from distcalc.collective import CollectiveKind, Algorithm, CollectiveCost, collective_cost, \
        collective_costs, valid_algorithms, lower_bound, collective_latency_and_volume

Formulas live in :mod:`.flat` (switch and ring, spec F01–F29), :mod:`.grid` (torus/mesh, T01–T13),
:mod:`.hierarchical` (H01–H06), :mod:`.fat_tree` (tree topology, X01–X03) and :mod:`.nccl_model` (H07/H08);
:mod:`.registry` maps each (collective × topology) to its algorithms; :mod:`.bounds` gives docs/spec/collectives.md §3's bounds.
"""

from distcalc.collective.bounds import LowerBound, lower_bound, ports_per_gpu
from distcalc.collective.registry import (
    candidates, collective_cost, collective_costs, collective_latency_and_volume, parse_algorithm, parse_kind,
    valid_algorithms,
)
from distcalc.collective.types import Algorithm, CollectiveCost, CollectiveKind

__all__ = [
    "Algorithm", "CollectiveCost", "CollectiveKind", "LowerBound", "candidates", "collective_cost",
    "collective_costs", "collective_latency_and_volume", "lower_bound", "parse_algorithm", "parse_kind",
    "ports_per_gpu", "valid_algorithms",
]
