"""Tree and chain schedules: binomial trees, linear and ring Gather/Scatter, pipelined chains, double binary tree.

Every function takes ``ranks`` — the participating GPUs in *relative* order, root first — so the same
schedule serves a flat communicator and one level of a hierarchical one. Reductions are the time-reversed
broadcasts over the same tree (:meth:`Rows.reversed`).

Sources: MPICH ``bcast.c`` binomial (mask from the highest power of two down), ``scatter.c``/``gather.c``
binomial, Thakur, Rabenseifner & Gropp 2005 §4; NCCL ``src/graph/trees.cc`` ``ncclGetBtree``/``ncclGetDtree``
for the double binary tree; spec collectives.md F07/F08/F10/F12/F17/F18.
"""

from __future__ import annotations

import numpy as np

from distcalc.collective.pipelined_tree import (  # noqa: F401  (re-exported: the schedules' tree shapes)
    double_binary_trees, nccl_btree_parent, nccl_dtree_parents, tree_depths,
)
from distcalc.simulate.schedule import Op, Rows, concat, sequence


def ceil_log2(n: int) -> int:
    return (n - 1).bit_length()


def binomial_broadcast_rows(ranks: np.ndarray, chunks: np.ndarray) -> Rows:
    """Binomial broadcast of ``chunks`` from ranks[0]: step k, relative ranks r ≡ 0 mod 2^(L−k) send to
    r + 2^(L−1−k) (MPICH bcast binomial). L = ⌈log2 N⌉ steps of the whole buffer."""
    ranks, n = np.asarray(ranks), len(ranks)
    out = []
    levels = ceil_log2(n)
    for k in range(levels):
        mask = 1 << (levels - 1 - k)
        rel = np.arange(0, n, 2 * mask)
        rel = rel[rel + mask < n]
        out.append(Rows.of(k, ranks[rel][:, None], ranks[rel + mask][:, None], np.asarray(chunks)[None, :], Op.COPY))
    return concat(*out)


def binomial_scatter_rows(ranks: np.ndarray, shards: np.ndarray) -> Rows:
    """Binomial scatter: like the broadcast, but r sends r + mask only the shards of relative ranks
    [r + mask, r + 2·mask). ``shards`` is (N, parts): the chunks of each relative rank's shard."""
    ranks, n = np.asarray(ranks), len(ranks)
    out = []
    levels = ceil_log2(n)
    for k in range(levels):
        mask = 1 << (levels - 1 - k)
        for r in range(0, n, 2 * mask):
            if r + mask < n:
                block = shards[r + mask: min(r + 2 * mask, n)].ravel()
                out.append(Rows.of(k, ranks[r], ranks[r + mask], block, Op.COPY))
    return concat(*out)


def linear_scatter_rows(ranks: np.ndarray, shards: np.ndarray) -> Rows:
    """Linear scatter: the root sends relative rank i its shard at step i − 1 (N − 1 steps)."""
    ranks, n = np.asarray(ranks), len(ranks)
    i = np.arange(1, n)
    return Rows.of((i - 1)[:, None], ranks[0], ranks[i][:, None], shards[i], Op.COPY)


def ring_gather_rows(ranks: np.ndarray, shards: np.ndarray, two_sided: bool) -> Rows:
    """Gather to ranks[0] along a ring (both directions) or a path (one direction): the block of position d
    moves one hop per step towards the root, all blocks at once, so every link carries one block per step:
    ⌈(N−1)/2⌉ steps (N − 1 one-sided)."""
    ranks, n = np.asarray(ranks), len(ranks)
    right = -(-(n - 1) // 2) if two_sided else n - 1
    out = []
    for side, count in ((1, right), (-1, n - 1 - right)):
        d = np.arange(1, count + 1)  # block of position side·d
        for t in range(count):
            moving = d[d > t]  # block d is at distance d − t from the root at step t
            src = ranks[(side * (moving - t)) % n]
            dst = ranks[(side * (moving - t - 1)) % n]
            out.append(Rows.of(t, src[:, None], dst[:, None], shards[(side * moving) % n], Op.COPY))
    return concat(*out)


def chain_broadcast_rows(ranks: np.ndarray, segments: np.ndarray) -> Rows:
    """Pipelined chain: segment s leaves position p for p + 1 at step s + p. N − 2 + k steps (F07).
    ``segments`` is (k, per_segment) chunk ids."""
    ranks, n = np.asarray(ranks), len(ranks)
    k = segments.shape[0]
    p = np.arange(n - 1)[:, None, None]
    s = np.arange(k)[None, :, None]
    return Rows.of(s + p, ranks[p], ranks[p + 1], segments[None, :, :], Op.COPY)


# --------------------------------------------------------------------------- double binary tree (NCCL)
# The tree shapes (NCCL trees.cc) live with their finite-k cost in distcalc.collective.pipelined_tree.
def pipelined_tree_allreduce_rows(ranks: np.ndarray, parent: np.ndarray, segments: np.ndarray) -> Rows:
    """Pipelined reduce-then-broadcast on one tree (positions index ``ranks``), level-synchronous: with D the
    tree depth, a node at depth d ≥ 1 sends segment s up at step s + D − d; a node at depth d forwards it to
    its children at step s + D + d. k + 2D − 1 steps."""
    ranks = np.asarray(ranks)
    depth = tree_depths(parent)
    d_max = int(depth.max())
    k = segments.shape[0]
    child = np.flatnonzero(parent >= 0)
    s = np.arange(k)[None, :, None]
    up = Rows.of(s + d_max - depth[child][:, None, None], ranks[child][:, None, None],
                 ranks[parent[child]][:, None, None], segments[None], Op.REDUCE)
    down = Rows.of(s + d_max + depth[parent[child]][:, None, None], ranks[parent[child]][:, None, None],
                   ranks[child][:, None, None], segments[None], Op.COPY)
    return concat(up, down)


def double_binary_tree_allreduce_rows(ranks: np.ndarray, chunks_per_tree: np.ndarray) -> Rows:
    """NCCL double binary tree AllReduce: half of the buffer on each tree, both pipelined concurrently in k
    segments (``chunks_per_tree`` is (2, k, per_segment)). N = 2: one tree (a single link pair)."""
    trees = double_binary_trees(len(ranks))
    if len(trees) == 1:
        merged = chunks_per_tree.transpose(1, 0, 2).reshape(chunks_per_tree.shape[1], -1)
        return pipelined_tree_allreduce_rows(ranks, trees[0].parent, merged)
    return concat(*(pipelined_tree_allreduce_rows(ranks, t.parent, chunks)
                    for t, chunks in zip(trees, chunks_per_tree)))


def binomial_allreduce_rows(ranks: np.ndarray, chunks: np.ndarray) -> Rows:
    """F17: binomial reduce to ranks[0], then binomial broadcast (2⌈log2 N⌉ steps of M)."""
    bcast = binomial_broadcast_rows(ranks, chunks)
    return sequence(bcast.reversed(Op.REDUCE), bcast)
