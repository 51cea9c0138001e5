"""Ring and line schedules built from reduction *chains* (vectorised over groups, targets, hops, chunks).

A ReduceScatter on a group of n ranks (a ring, a torus line, a mesh line) is a set of chains: for every
target position j, each chain starts at some rank, adds its contribution and passes the partial sum one
hop per step towards j, where it is reduced into j's own data. Chains are *end-aligned*: every chain ends on
the phase's last step, which keeps one message per directed link per step (checked by the simulator's
link loads, not assumed). AllGather is the same schedule time-reversed with copies (:meth:`Rows.reversed`).

Ring modes (docs/spec/collectives.md §2.1, §2.3):

* ``UNI``: unidirectional ring, n−1 steps, one chain of n−1 hops per target (F01/F04/F05; MPICH
  ``red_scat.c`` / ``allgather.c``; NCCL ring).
* ``COUNTER``: two counter-rotating rings, each on half of every shard, n−1 steps (F02/F06).
* ``BUCKET``: shortest path both ways, ⌊n/2⌋ steps (F03, scaling-book sharding.md L305-317). For even n the
  antipode's contribution is split in halves, one half each way, so each direction carries (n−1)/2 shards.
* ``LINE``: no wraparound (mesh line): contributions flow in from both ends, n−1 steps (T07).
"""

from __future__ import annotations

import enum

import numpy as np

from distcalc.simulate.schedule import Op, Rows, concat


class RingMode(str, enum.Enum):
    UNI = "uni"
    COUNTER = "counter"
    BUCKET = "bucket"
    LINE = "line"


def chain_rows(groups: np.ndarray, bundles: np.ndarray, path: np.ndarray, hops: np.ndarray,
               sub: slice, total_steps: int, op: Op = Op.REDUCE) -> Rows:
    """Rows for one family of chains, end-aligned on ``total_steps``.

    groups: (G, n) ranks in ring order. bundles: (G, n, b) chunk ids destined to each position.
    path: (K, H+1) positions; chain k visits path[k, 0..hops[k]] and path[k, hops[k]] is its target.
    sub: which slice of each bundle the chain carries.
    """
    groups = np.asarray(groups)
    path = np.asarray(path, dtype=np.int64)
    hops = np.asarray(hops, dtype=np.int64)
    k_count, h_max = path.shape[0], path.shape[1] - 1
    if k_count == 0 or h_max == 0:
        return Rows.empty()
    target = path[np.arange(k_count), hops]  # (K,)
    chunks = bundles[:, target, sub]  # (G, K, b')
    h = np.arange(h_max)
    valid = h[None, :] < hops[:, None]  # (K, H)
    step = (total_steps - hops[:, None] + h[None, :])  # (K, H)
    src_pos, dst_pos = path[:, :-1], path[:, 1:]
    kk, hh = np.nonzero(valid)
    g = np.arange(groups.shape[0])
    # (G, V, b') with V = valid (chain, hop) pairs
    src = groups[g[:, None], src_pos[kk, hh][None, :]][:, :, None]
    dst = groups[g[:, None], dst_pos[kk, hh][None, :]][:, :, None]
    stp = step[kk, hh][None, :, None]
    chk = chunks[:, kk, :]
    return Rows.of(stp, src, dst, chk, int(op))


def _halves(b: int) -> tuple[slice, slice]:
    if b % 2:
        raise ValueError(f"bundles of {b} chunks cannot be split in halves")
    return slice(0, b // 2), slice(b // 2, b)


def ring_steps(n: int, mode: RingMode) -> int:
    """Steps of one ReduceScatter/AllGather phase on a group of n in this mode."""
    if n <= 1:
        return 0
    if mode == RingMode.BUCKET and n >= 3:
        return n // 2
    return n - 1


def effective_mode(n: int, mode: RingMode) -> RingMode:
    """A group of 2 has a single link pair: every mode degenerates to the unidirectional ring (docs/spec/collectives.md §4.3)."""
    return RingMode.UNI if n == 2 and mode != RingMode.LINE else mode


def reduce_scatter_rows(groups: np.ndarray, bundles: np.ndarray, mode: RingMode) -> Rows:
    """ReduceScatter inside every group concurrently: bundle j of every rank ends reduced on position j."""
    groups = np.atleast_2d(groups)
    n = groups.shape[1]
    if n <= 1:
        return Rows.empty()
    mode = effective_mode(n, mode)
    steps = ring_steps(n, mode)
    b = bundles.shape[2]
    j = np.arange(n)
    whole = slice(0, b)
    families: list[tuple[np.ndarray, np.ndarray, slice]] = []

    def cw(d: int) -> tuple[np.ndarray, np.ndarray]:  # from j−d, moving +1 each hop (clockwise)
        return (j[:, None] - d + np.arange(d + 1)[None, :]) % n, np.full(n, d)

    def ccw(d: int) -> tuple[np.ndarray, np.ndarray]:  # from j+d, moving −1 each hop
        return (j[:, None] + d - np.arange(d + 1)[None, :]) % n, np.full(n, d)

    if mode == RingMode.UNI:  # j+1 → j+2 → … → j (n−1 hops)
        families.append((*cw(n - 1), whole))
    elif mode == RingMode.COUNTER:
        lo, hi = _halves(b)
        families.append((*cw(n - 1), lo))  # clockwise ring on the first half of every shard
        families.append((*ccw(n - 1), hi))  # counter-clockwise ring on the second half
    elif mode == RingMode.BUCKET:
        a = n // 2
        if n % 2:
            families.append((*cw(a), whole))
            families.append((*ccw(a), whole))
        else:  # the antipode j±a splits its contribution: first half clockwise, second half counter-clockwise
            lo, hi = _halves(b)
            families += [(*cw(a), lo), (*ccw(a - 1), lo), (*cw(a - 1), hi), (*ccw(a), hi)]
    else:  # LINE: chains from position 0 rightwards and from n−1 leftwards
        h = np.arange(n)
        right = np.broadcast_to(h, (n, n)).copy()  # path 0, 1, …, j (j hops)
        left = np.broadcast_to(n - 1 - h, (n, n)).copy()  # path n−1, …, j (n−1−j hops)
        families.append((right, j, whole))
        families.append((left, n - 1 - j, whole))
    return concat(*(chain_rows(groups, bundles, path, hops, sub, steps) for path, hops, sub in families))


def all_gather_rows(groups: np.ndarray, bundles: np.ndarray, mode: RingMode) -> Rows:
    """AllGather inside every group: the time-reversed ReduceScatter with copies."""
    return reduce_scatter_rows(groups, bundles, mode).reversed(Op.COPY)


def shard_bundles(gpus: int, parts: int) -> np.ndarray:
    """Bundles (1, N, parts) for one group of all ranks: rank j's shard is chunks j·parts … j·parts+parts−1."""
    return np.arange(gpus * parts).reshape(1, gpus, parts)
