"""Pipelined tree AllReduce with a finite number of segments k: NCCL's double binary tree (F18), NCCL's Tree
on a two-level cluster (intra-node chain + inter-node double binary tree, H03) and in-network reduction (F20).

F18, H03 and F20 in docs/spec/collectives.md price these algorithms at k → ∞ (their bandwidth term is the
steady-state egress of the busiest GPU, their α term one pass through the tree). NCCL runs them with a finite
k: its Tree/Simple AllReduce cuts each channel's share of the buffer into chunks of at most
buffSize/NCCL_STEPS (512 KiB) and halves the chunk while a channel has fewer than 8·depth, 4·depth, then
depth chunks (down to 128, 64, 32 KiB) — NVIDIA/nccl v2.17.1-1 (git 5d3ab08) ``src/enqueue.cc``
``computeColl``, the ``ncclPatternTreeUpDown`` chunk-size loop ("Optimize chunkSize / nSteps"; the same loop
is in the 2.7-era ``treeMode`` code). At that k the pipeline's fill and drain are not
negligible, so this module gives the finite-k form the simulator's schedules can be checked against.

The schedule (level-synchronous pipelining of every tree, Sanders, Speck & Träff, "Two-tree algorithms for full
bandwidth broadcast, reduction and scan", Parallel Computing 35(12), 2009): in a tree of depth D, a GPU at
depth d ≥ 1 sends segment s to its parent at step s + D − d (reduce), and its parent forwards the reduced
segment s to it at step s + D + d_parent (broadcast): k + 2D − 1 steps. All trees run at once, each on its
own share of M (NCCL: two trees per channel, half of the channel's data on each). Per step t the cost is
α_t + max over GPU ports (egress and ingress, NVLink and NIC apart) of the bytes crossing that port at t over
its bandwidth, α_t being the α of the slowest tier crossed at t (α2 when any transfer crosses nodes). Summed
over the steps:

    T(k) = Σ_t [α_t + max_port load_t(port)·(M/k)/B_port]

This is exact for the level-synchronous schedule whatever the tree shape. In steady state the busiest GPU
(interior in one tree, leaf of the other) carries 4 half-segments per step: T → 2Lα + 2M/B (F18) as the
fill and drain steps become negligible (k → ∞, α → 0); at N = 2 the single tree gives (k + 1)(α + M/(kB)).

The tree shapes are NCCL's (``ncclGetBtree``/``ncclGetDtree``, NVIDIA/nccl ``src/graph/trees.cc``): the
binary tree over ranks whose parent flips the lowest set bit, and its mirror (N even) or its shift by one
rank (N odd), so that most leaves of one tree are interior in the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from distcalc.collective.types import Algorithm, CollectiveCost, CollectiveKind, Terms, zero_terms
from distcalc.topology import Topology


def nccl_btree_parent(n: int, rank: int) -> int:
    """Parent of ``rank`` in NCCL's binary tree (``ncclGetBtree``, trees.cc): −1 for the root 0."""
    if rank == 0:
        return -1
    bit = 1
    while bit < n and not bit & rank:
        bit <<= 1
    up = (rank ^ bit) | (bit << 1)
    return rank ^ bit if up >= n else up


def nccl_dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents in NCCL's two trees (``ncclGetDtree``): the binary tree, and its mirror (N even) or its
    shift by one rank (N odd), so that most leaves of one tree are interior in the other."""
    first = np.array([nccl_btree_parent(n, r) for r in range(n)], dtype=np.int64)
    second = np.empty(n, dtype=np.int64)
    for r in range(n):
        if n % 2:
            up = nccl_btree_parent(n, (r - 1) % n)
            second[r] = -1 if up == -1 else (up + 1) % n
        else:
            up = nccl_btree_parent(n, n - 1 - r)
            second[r] = -1 if up == -1 else n - 1 - up
    return first, second


def tree_depths(parent: np.ndarray) -> np.ndarray:
    """Depth of every position of a parent array (−1 = root or not in the tree: depth 0)."""
    depth = np.zeros(parent.size, dtype=np.int64)
    for r in range(parent.size):
        d, x = 0, r
        while parent[x] != -1:
            x, d = parent[x], d + 1
            if d > parent.size:
                raise ValueError("not a tree")
        depth[r] = d
    return depth


@dataclass(frozen=True)
class PipelinedTree:
    """One tree of a pipelined AllReduce: ``parent[r]`` of every GPU r (−1: the root, or a GPU the tree does
    not reach) and the share of M it carries, cut into the schedule's k segments."""

    parent: np.ndarray
    share: float


def double_binary_trees(n: int) -> list[PipelinedTree]:
    """NCCL's two trees over ``n`` ranks, half of M each; one tree carrying M when n ≤ 2 (a single link pair)."""
    first, second = nccl_dtree_parents(n)
    if n <= 2:
        return [PipelinedTree(first, 1.0)]
    return [PipelinedTree(first, 0.5), PipelinedTree(second, 0.5)]


def chain_dbt_trees(g: int, nodes: int) -> list[PipelinedTree]:
    """H03 (NCCL Tree on a two-level cluster): g channels, one per NIC rail, each on M/g. In channel c every
    node chains its GPUs c+g−1 → … → c+1 → c (local indices mod g; GPU id = node·g + local); the heads
    (local c) are joined over rail c by NCCL's double binary tree over nodes, half of the channel on each tree
    (one tree carrying the channel when nodes ≤ 2)."""
    out = []
    for c in range(g):
        for node_tree in double_binary_trees(nodes):
            parent = np.full(g * nodes, -1, dtype=np.int64)
            for node in range(nodes):
                for i in range(1, g):
                    parent[node * g + (c + i) % g] = node * g + (c + i - 1) % g
                if node_tree.parent[node] >= 0:
                    parent[node * g + c] = int(node_tree.parent[node]) * g + c
            out.append(PipelinedTree(parent, node_tree.share / g))
    return out


def tree_steps(trees: list[PipelinedTree], segments: int) -> int:
    """k + 2D − 1 with D the deepest tree (0 when no tree has an edge)."""
    depth = max(int(tree_depths(t.parent).max()) for t in trees)
    return segments + 2 * depth - 1 if depth else 0


def pipelined_trees_allreduce(trees: list[PipelinedTree], segments: int, m: Any, gpus_per_node: int,
                              b1: float, a1: float, b2: float, a2: float) -> Terms:
    """T(k) of the module docstring for ``trees`` run at once in k = ``segments`` segments on a two-level
    cluster (``gpus_per_node`` GPUs per node on B1/α1 ports, one NIC of B2/α2 per GPU); a single switch is one
    node (B2/α2 unused). Sends: the busiest GPU's egress over all steps."""
    if segments < 1:
        raise ValueError(f"segments must be ≥ 1, got {segments}")
    gpus = trees[0].parent.size
    steps = tree_steps(trees, segments)
    if gpus <= 1 or steps == 0:
        return zero_terms(m)
    src, dst, tier, share, first = [], [], [], [], []
    for tree in trees:
        depth = tree_depths(tree.parent)
        d_max = int(depth.max())
        child = np.flatnonzero(tree.parent >= 0)
        par = tree.parent[child]
        crossing = (child // gpus_per_node != par // gpus_per_node).astype(np.int64)
        for frm, to, start in ((child, par, d_max - depth[child]), (par, child, d_max + depth[par])):
            src.append(frm), dst.append(to), tier.append(crossing), first.append(start)
            share.append(np.full(child.size, tree.share))
    src, dst, tier, share, first = (np.concatenate(x) for x in (src, dst, tier, share, first))
    # every transfer is active on steps first … first + k − 1: the loads are constant between breakpoints
    cuts = np.unique(np.concatenate([first, first + segments, [0, steps]]))
    span = np.diff(cuts).astype(float)  # steps in each interval [cuts[j], cuts[j+1])
    on, off = np.searchsorted(cuts, first), np.searchsorted(cuts, first + segments)
    load = np.zeros((cuts.size, gpus, 2, 2))  # [interval, gpu, out/in, intra/inter] in units of M/k
    crosses = np.zeros(cuts.size)
    for edge, sign in ((on, 1.0), (off, -1.0)):
        np.add.at(load, (edge, src, 0, tier), sign * share)
        np.add.at(load, (edge, dst, 1, tier), sign * share)
        np.add.at(crosses, edge, sign * tier)
    load, crosses = np.cumsum(load, axis=0)[:-1], np.cumsum(crosses)[:-1]
    per_byte = np.max(load[..., 0] / b1, axis=(1, 2))
    if gpus_per_node < gpus:
        per_byte = np.maximum(per_byte, np.max(load[..., 1] / b2, axis=(1, 2)))
    alpha = float((span * np.where(crosses > 0.5, a2, a1)).sum())
    sent = float((span[:, None] * load[:, :, 0, :].sum(axis=2)).sum(axis=0).max())
    m_arr = m if isinstance(m, float) else np.asarray(m, dtype=float)
    return Terms(steps, alpha + 0 * m_arr, float((span * per_byte).sum()) * m_arr / segments,
                 sent * m_arr / segments)


def dbt_allreduce_segments(n: int, m: Any, b: float, a: float, segments: int) -> Terms:
    """F18 at k segments (NCCL's double binary tree on one switch, B and α per port)."""
    return pipelined_trees_allreduce(double_binary_trees(n), segments, m, n, b, a, b, a)


def chain_dbt_allreduce_segments(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float,
                                 segments: int) -> Terms:
    """H03 at k segments (NCCL Tree: intra-node chains + inter-node double binary tree per rail channel)."""
    return pipelined_trees_allreduce(chain_dbt_trees(g, n), segments, m, g, b1, a1, b2, a2)


def in_network_allreduce_segments(n: int, m: Any, b: float, a: float, segments: int) -> Terms:
    """F20 at k segments: segment s goes up to the reducing switch at step s and comes down at step s + 1,
    (k + 1)(α + M/(kB)) (→ 2α + M/B as k → ∞ and α → 0 per segment); sends M. Source: [D]; NVLS/SHARP
    reduce in the switch (scaling-book gpus.md "In network reductions")."""
    if segments < 1:
        raise ValueError(f"segments must be ≥ 1, got {segments}")
    if n <= 1:
        return zero_terms(m)
    steps = segments + 1
    return Terms(steps, steps * a + 0 * m, steps * m / (segments * b), m + 0 * m)


#: Algorithms with a finite-k form here, and the k → ∞ spec formula each one converges to.
SEGMENTED_FORMULAS = {Algorithm.DOUBLE_BINARY_TREE: "F18", Algorithm.CHAIN_DBT: "H03", Algorithm.IN_NETWORK: "F20"}


def segmented_cost(kind: CollectiveKind | str, size_bytes: float, topo: Topology, algorithm: Algorithm | str,
                   segments: int) -> CollectiveCost | None:
    """AllReduce by a pipelined tree algorithm (double-binary-tree, chain-dbt, in-network) at k = ``segments``
    — the schedule NCCL runs, with its fill and drain — or None when ``algorithm`` has no finite-k form here
    (its spec formula is then the schedule's own). Formula id: the k → ∞ formula's, suffixed ``-k``."""
    name = Algorithm(algorithm) if not isinstance(algorithm, Algorithm) else algorithm
    if str(getattr(kind, "value", kind)) != "all-reduce" or name not in SEGMENTED_FORMULAS:
        return None
    m = float(size_bytes)
    if name == Algorithm.IN_NETWORK:
        terms = in_network_allreduce_segments(topo.gpus, m, topo.bandwidth_bytes_per_s, topo.latency_s, segments)
    elif name == Algorithm.DOUBLE_BINARY_TREE:
        terms = dbt_allreduce_segments(topo.gpus, m, topo.bandwidth_bytes_per_s, topo.latency_s, segments)
    else:
        g = topo.gpus_per_node or topo.gpus
        terms = chain_dbt_allreduce_segments(g, topo.nodes, m, topo.bandwidth_bytes_per_s, topo.latency_s,
                                             float(topo.inter_bandwidth_bytes_per_s), float(topo.inter_latency_s),
                                             segments)
    alpha, bw = float(terms.alpha_term_s), float(terms.bw_term_s)
    return CollectiveCost(collective=CollectiveKind.ALL_REDUCE, algorithm=name, size_bytes=m, gpus=topo.gpus,
                          time_s=alpha + bw, latency_term_s=alpha, bandwidth_term_s=bw, steps=int(terms.steps),
                          bytes_sent_per_gpu=float(terms.sent_bytes), formula_id=f"{SEGMENTED_FORMULAS[name]}-k")
