"""Dispatch: the schedule generator of every (collective × topology × algorithm) of the collective library.

=====================  =============================================================  ===================
topology               algorithms (collective library names)                          generator module
=====================  =============================================================  ===================
switch, tree           ring, recursive-doubling/halving, rabenseifner, binomial-tree,  plans_flat
                       double-binary-tree, direct, in-network, bruck, pairwise,
                       scatter-allgather, pipelined-chain, linear
ring (1D torus)        ring, bidirectional-ring, bucket, mirrored-halving, swing,      plans_flat
                       pipelined-chain, ring (gather/scatter, all-to-all), direct
mesh, torus            ring / bidirectional-ring / snake-ring on a Hamiltonian cycle,  plans_grid, torus
                       dim-sequential, dim-concurrent, pipelined-chain, ring
                       gather/scatter, direct all-to-all
hierarchical           hierarchical, rail-ring, chain-dbt, astra-baseline,             plans_grid
                       pipelined-chain, direct; nccl-ring / nccl-tree run the
                       rail-ring / chain-dbt schedules (their analytic side is NCCL's
                       tuning model, not a schedule)
=====================  =============================================================  ===================

Pipelined algorithms take a segment count k: the pipelined chain uses the collective library's optimal k
(so both sides describe the same schedule); the double binary tree, chain + DBT and in-network reduction,
whose spec formulas are the k → ∞ ideal, use k ≈ √(depth·M/(α·B)) clipped to [1, 64] and are compared with
their finite-k form at that k (:mod:`distcalc.collective.pipelined_tree`).
"""

from __future__ import annotations

import math

import numpy as np

from distcalc.simulate.plans_flat import Plan, ring_topology_plan, switch_plan
from distcalc.simulate.plans_grid import grid_plan, hierarchical_plan
from distcalc.simulate.schedule import Pattern, Rows, Schedule, build
from distcalc.topology import Topology, TopologyKind

MAX_SEGMENTS = 64


def default_segments(depth_steps: int, size_bytes: float, topo: Topology) -> int:
    """k ≈ √(depth·M/(α·B)) minimises (k + depth)(α + M/(kB)); clipped to [1, MAX_SEGMENTS]."""
    alpha = max(topo.latency_s, 1e-12)
    k = math.sqrt(max(depth_steps, 1) * size_bytes / (alpha * topo.bandwidth_bytes_per_s))
    return int(min(MAX_SEGMENTS, max(1, round(k))))


def make_plan(kind: str, algorithm: str, topo: Topology, segments: int, pick=None) -> Plan:
    n = topo.gpus
    if n == 1:  # every collective on one GPU is a no-op (docs/spec/collectives.md §4.7)
        return Plan(Rows.empty(), 1)
    if topo.kind in (TopologyKind.SWITCH, TopologyKind.TREE):
        return switch_plan(kind, algorithm, n, segments)
    if topo.kind == TopologyKind.RING:
        return ring_topology_plan(kind, algorithm, np.arange(n), segments)
    if topo.kind == TopologyKind.HIERARCHICAL:
        return hierarchical_plan(kind, algorithm, topo.gpus_per_node or n, topo.nodes, segments)
    from distcalc.collective.grid import has_hamiltonian_cycle
    wrap = topo.kind == TopologyKind.TORUS
    return grid_plan(kind, algorithm, tuple(topo.shape), wrap, has_hamiltonian_cycle(topo.dims, wrap), segments,
                     pick)


def generate_schedule(kind: str, algorithm: str, topo: Topology, size_bytes: float, segments: int | None = None,
                      pick=None) -> Schedule:
    """The schedule of ``algorithm`` for collective ``kind`` (CLI spellings, e.g. ``all-reduce``,
    ``dim-sequential``) on ``topo`` with buffer size M = ``size_bytes``. Raises KeyError if there is none."""
    if segments is None:
        segments = default_segments(2 * max(1, (topo.gpus - 1).bit_length()), size_bytes, topo)
    return to_schedule(kind, algorithm, topo, size_bytes, make_plan(kind, algorithm, topo, segments, pick))


def to_schedule(kind: str, algorithm: str, topo: Topology, size_bytes: float, plan: Plan) -> Schedule:
    """Wrap a plan's rows as a :class:`Schedule` whose chunks carry the real bytes of M."""
    pattern = Pattern(kind)
    per_rank = topo.gpus if pattern == Pattern.ALL_TO_ALL else 1  # M is one rank's send buffer for All-to-All
    return build(pattern, algorithm, topo.gpus, plan.chunks, size_bytes * per_rank / plan.chunks, plan.rows,
                 extra_nodes=plan.extra_nodes, notes=plan.notes)
