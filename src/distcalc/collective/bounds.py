"""Lower bounds on collective time (docs/spec/collectives.md §3), adjusted for ports, in-network reduction and
bisection.

Model: the α-β model of the cost formulas. The bound is latency bound + bandwidth bound, where

* latency bound: ⌈log_{k+1} N⌉·α for direct-connect topologies with k ports per GPU (ring, mesh, torus);
  on switched topologies (switch, tree, hierarchical) 1·α_min, because posting all messages at once counts as
  one step in this model (spec F19/F23). The spec's one-message-per-step bound ⌈log2 N⌉α is reported
  separately as ``one_port_latency_s``.
* bandwidth bound per collective (f = (N−1)/N, k ports of B): AG/RS f·M/(kB); AR 2f·M/(kB) (P&Y09), with
  in-network reduction M/B; Broadcast/Reduce M/(kB); Gather/Scatter f·M/(kB); AllToAll
  max(f·M/(kB), every cut's bytes / cut bandwidth) — per-dimension bisection cuts on torus/mesh, a leaf's
  uplinks on a tree, a node's NICs on hierarchical.
* hierarchical: per-GPU ports B1 + B2, plus the node-level cut (a node is a super-rank with g·B2): AR
  2(n−1)/n·M/(g·B2), RS/AG (n−1)/n·M/(g·B2), Broadcast/Reduce M/(g·B2), Gather/Scatter (N−g)/N·M/(g·B2),
  AllToAll (N−g)/N·M/B2 and (g−1)/N·M/B1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from distcalc.collective.types import CollectiveKind, as_size, ceil_log2
from distcalc.topology import Topology, TopologyKind, kind_traits

K = CollectiveKind


@dataclass(frozen=True)
class LowerBound:
    """A lower bound on a collective's time: ``time_s = latency_s + bandwidth_s``."""

    time_s: Any
    latency_s: float
    bandwidth_s: Any
    one_port_latency_s: float
    ports: int


def ports_per_gpu(topo: Topology) -> int:
    """k: links per GPU in each direction (ring 2, N = 2 ring 1; torus/mesh Σ (2 if n_i ≥ 3 else 1); switch,
    tree 1; hierarchical 2 (NVLink + NIC) across nodes)."""
    if kind_traits(topo.kind).direct:
        return max(1, sum(2 if n >= 3 else 1 for n in topo.dims))
    if topo.kind == TopologyKind.HIERARCHICAL:
        return 2 if topo.nodes > 1 and (topo.gpus_per_node or 1) > 1 else 1
    return 1


def _log_ceil(n: int, base: int) -> int:
    steps, reach = 0, 1
    while reach < n:
        reach *= base
        steps += 1
    return steps


def _cut_bound(topo: Topology) -> float:
    """max over cuts of (AllToAll bytes crossing the cut per byte of M) / (cut bandwidth)."""
    n, b = topo.gpus, topo.bandwidth_bytes_per_s
    worst = 0.0
    if kind_traits(topo.kind).direct:
        for size in topo.dims:
            rows = n // size
            crossing = (size // 2) * ((size + 1) // 2) * rows * rows / n
            links = rows * (2 if topo.wraparound and size >= 3 else 1)
            worst = max(worst, crossing / (links * b))
    elif topo.kind == TopologyKind.SWITCH:
        worst = (n // 2) * ((n + 1) // 2) / n / (n / 2 * b)
    elif topo.kind == TopologyKind.TREE and topo.nodes > 1:
        leaf = topo.gpus_per_node or n
        worst = leaf * (n - leaf) / n / (leaf * b / topo.oversubscription)
    elif topo.kind == TopologyKind.HIERARCHICAL and topo.nodes > 1:
        g = topo.gpus_per_node or n
        worst = max((n - g) / n / float(topo.inter_bandwidth_bytes_per_s), (g - 1) / n / b)
    return worst


def lower_bound(kind: CollectiveKind | str, size_bytes: Any, topo: Topology) -> LowerBound:
    """Lower bound on the time of ``kind`` moving ``size_bytes`` (M, NCCL convention) on ``topo``."""
    from distcalc.collective.registry import parse_kind

    kind = parse_kind(kind)
    m = as_size(size_bytes)
    n = topo.gpus
    k = ports_per_gpu(topo)
    if n == 1:
        zero = m * 0.0
        return LowerBound(zero, 0.0, zero, 0.0, k)
    f = (n - 1) / n
    hierarchical = topo.kind == TopologyKind.HIERARCHICAL
    if hierarchical and topo.nodes > 1:
        alpha = min(topo.latency_s, float(topo.inter_latency_s))
        port_bw = topo.bandwidth_bytes_per_s + float(topo.inter_bandwidth_bytes_per_s)
    else:
        alpha = topo.latency_s
        port_bw = k * topo.bandwidth_bytes_per_s
    switched = not kind_traits(topo.kind).direct
    latency = alpha * (1 if switched else _log_ceil(n, k + 1))
    one_port = alpha * ceil_log2(n)
    if kind in (K.ALL_GATHER, K.REDUCE_SCATTER, K.GATHER, K.SCATTER):
        coefficient = f / port_bw
    elif kind == K.ALL_REDUCE:
        coefficient = 2 * f / port_bw
        if topo.kind == TopologyKind.SWITCH and topo.in_network_reduction:
            coefficient = min(coefficient, 1.0 / topo.bandwidth_bytes_per_s)
    elif kind in (K.BROADCAST, K.REDUCE):
        coefficient = 1.0 / port_bw
    else:
        coefficient = max(f / port_bw, _cut_bound(topo))
    if hierarchical and topo.nodes > 1:
        g, nodes, b2 = topo.gpus_per_node or 1, topo.nodes, float(topo.inter_bandwidth_bytes_per_s)
        node_cut = {K.ALL_REDUCE: 2 * (nodes - 1) / nodes, K.REDUCE_SCATTER: (nodes - 1) / nodes,
                    K.ALL_GATHER: (nodes - 1) / nodes, K.BROADCAST: 1.0, K.REDUCE: 1.0,
                    K.GATHER: (n - g) / n, K.SCATTER: (n - g) / n, K.ALL_TO_ALL: 0.0}[kind]
        coefficient = max(coefficient, node_cut / (g * b2))
    bandwidth = coefficient * m
    if np.ndim(m):
        bandwidth = np.asarray(bandwidth, dtype=float)
    assert math.isfinite(latency)
    return LowerBound(latency + bandwidth, latency, bandwidth, one_port, k)
