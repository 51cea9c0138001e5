"""Recursive (butterfly) schedules: recursive doubling/halving, Rabenseifner, Bruck, mirrored halving, Swing.

A *butterfly ReduceScatter* is driven by one perfect matching π_s of the ranks per step s. Rank x is
responsible for the shards reach(x, s); at step s it sends its partial sums for reach(π_s(x), s+1) to its
partner and keeps reach(x, s+1), where reach(x, L) = {x} and reach(x, s) = reach(x, s+1) ⊔ reach(π_s(x), s+1).
The matchings must make these unions disjoint and cover all ranks (checked). This one routine is:

* recursive halving (MPICH ``red_scat.c``; partner x XOR 2^(L−1−s), largest distance first);
* the RS half of Rabenseifner (MPICH ``allreduce.c``, ``reduce.c`` MPIR_Reduce_redscat_gather);
* 1D-torus halving at distance 2^s and its mirror on the other port (spec F28);
* Swing (De Sensi et al., NSDI'24): partner x + ρ(s) for even x, x − ρ(s) for odd x, ρ = 1, −1, 3, −5, 11, …,
  with the mirrored instance using −ρ (libswing "mirrored collectives"), spec F29.

AllGather is the time-reversed ReduceScatter (recursive doubling). Non-power-of-two N folds to
p' = 2^⌊log2 N⌋ as MPICH does: rank 2i+1 (i < N − p') first sends its whole buffer to rank 2i, which reduces
it, and gets its result back at the end (docs/spec/collectives.md §4.7).
"""

from __future__ import annotations

import numpy as np

from distcalc.simulate.schedule import Op, Rows, concat, sequence


def floor_log2(n: int) -> int:
    return n.bit_length() - 1


def fold(ranks: np.ndarray, chunks: np.ndarray) -> tuple[Rows, np.ndarray]:
    """MPICH's pre-step for non-power-of-two N: (rows, active ranks). Ranks 2i+1 (i < rem) send everything
    to 2i (reduce); the active ranks are 2i (i < rem) and 2·rem … N−1, in that order."""
    ranks, n = np.asarray(ranks), len(ranks)
    rem = n - (1 << floor_log2(n))
    i = np.arange(rem)
    rows = Rows.of(0, ranks[2 * i + 1][:, None], ranks[2 * i][:, None], np.asarray(chunks)[None, :], Op.REDUCE)
    active = np.concatenate([ranks[2 * i], ranks[2 * rem:]])
    return rows, active


def xor_matchings(p: int, largest_first: bool = True) -> list[np.ndarray]:
    """Partner x XOR 2^k per step (power-of-two p)."""
    bits = [1 << k for k in range(floor_log2(p))]
    if largest_first:
        bits.reverse()
    x = np.arange(p)
    return [x ^ d for d in bits]


def mirrored_xor_matchings(p: int) -> list[np.ndarray]:
    """The other port's halving at distance 2^s: x − d where bit d of x is 0, x + d where it is 1 (mod p), so
    the two instances load complementary directions of every ring link (spec F28)."""
    x = np.arange(p)
    out = []
    for k in range(floor_log2(p)):
        d = 1 << k
        out.append(np.where(x & d, x + d, x - d) % p)
    return out


def swing_rho(s: int) -> int:
    """ρ(s) = (1 − (−2)^(s+1))/3 = 1, −1, 3, −5, 11, −21, … (libswing ``rhos[]``)."""
    return (1 - (-2) ** (s + 1)) // 3


def swing_matchings(p: int, mirrored: bool = False) -> list[np.ndarray]:
    """Swing peers: x + ρ(s) for even x, x − ρ(s) for odd x (mirrored: −ρ)."""
    x = np.arange(p)
    sign = -1 if mirrored else 1
    return [(x + sign * np.where(x % 2 == 0, 1, -1) * swing_rho(s)) % p for s in range(floor_log2(p))]


def reach_sets(matchings: list[np.ndarray]) -> list[np.ndarray]:
    """reach[s] as a (p × p) bool matrix (row x: shards x is responsible for before step s)."""
    p = matchings[0].size if matchings else 1
    reach = [np.eye(p, dtype=bool)]
    for pi in reversed(matchings):
        if not np.array_equal(pi[pi], np.arange(p)) or np.any(pi == np.arange(p)):
            raise ValueError("a butterfly step is not a perfect matching")
        nxt = reach[0]
        if np.any(nxt & nxt[pi]):
            raise ValueError("butterfly matchings overlap: a shard would be reduced twice")
        reach.insert(0, nxt | nxt[pi])
    if not reach[0].all():
        raise ValueError("butterfly matchings do not cover every rank")
    return reach


def butterfly_reduce_scatter_rows(active: np.ndarray, matchings: list[np.ndarray],
                                  bundles: list[np.ndarray], tie: int = 0) -> Rows:
    """ReduceScatter over ``active`` ranks with the given matchings; ``bundles[j]`` are the chunks that end
    on active rank j (bundles may differ in size). ``tie`` = 1 routes antipodal partners the − way round."""
    active = np.asarray(active)
    if not matchings:
        return Rows.empty()
    reach = reach_sets(matchings)
    sizes = np.array([len(b) for b in bundles])
    ptr = np.concatenate([[0], np.cumsum(sizes)])
    flat = np.concatenate([np.asarray(b, dtype=np.int64) for b in bundles])
    out = []
    for s, pi in enumerate(matchings):
        x, j = np.nonzero(reach[s + 1][pi])  # x sends j's bundle to π(x)
        reps = sizes[j]
        offsets = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
        chunk = flat[np.repeat(ptr[j], reps) + offsets]
        out.append(Rows.of(s, np.repeat(active[x], reps), np.repeat(active[pi[x]], reps), chunk, Op.REDUCE, tie))
    return concat(*out)


def recursive_doubling_allreduce_rows(ranks: np.ndarray, chunks: np.ndarray) -> Rows:
    """F13: exchange-and-reduce the whole buffer with x XOR 2^k (after the fold for non-power-of-two N)."""
    pre, active = fold(ranks, chunks)
    chunks = np.asarray(chunks)[None, :]
    body = concat(*(Rows.of(k, active[:, None], active[pi][:, None], chunks, Op.REDUCE)
                    for k, pi in enumerate(xor_matchings(active.size, largest_first=False))))
    return sequence(pre, body, pre.reversed(Op.COPY))


def rabenseifner_reduce_scatter_rows(ranks: np.ndarray, chunks: np.ndarray) -> tuple[Rows, np.ndarray, np.ndarray]:
    """Fold + recursive halving of ``chunks`` (split evenly over the p' active ranks), partner distance 1 first.
    Returns
    (rows, active ranks, bundles (p', q)) — bundle i ends reduced on active rank i."""
    pre, active = fold(ranks, chunks)
    p = active.size
    bundles = np.asarray(chunks).reshape(p, -1)
    # MPICH allreduce.c / reduce.c run the halving with mask = 1, 2, 4, …: the M/2 message goes to the nearest partner
    body = butterfly_reduce_scatter_rows(active, xor_matchings(p, largest_first=False), list(bundles))
    return sequence(pre, body), active, bundles


def shard_reduce_scatter_rows(ranks: np.ndarray, shards: np.ndarray, matchings_for: callable) -> Rows:
    """ReduceScatter with N shards (``shards`` (N, parts) in relative-rank order): fold, butterfly among the
    p' active ranks (active rank i < rem owns shards 2i and 2i+1), then rank 2i sends shard 2i+1 back."""
    ranks, n = np.asarray(ranks), len(ranks)
    all_chunks = shards.ravel()
    pre, active = fold(ranks, all_chunks)
    p = active.size
    rem = n - p
    bundles = [np.concatenate([shards[2 * i], shards[2 * i + 1]]) for i in range(rem)]
    bundles += [shards[i + rem] for i in range(rem, p)]
    body = butterfly_reduce_scatter_rows(active, matchings_for(p), bundles)
    i = np.arange(rem)
    post = Rows.of(0, ranks[2 * i][:, None], ranks[2 * i + 1][:, None], shards[2 * i + 1], Op.COPY)
    return sequence(pre, body, post)


def bruck_allgather_rows(ranks: np.ndarray, shards: np.ndarray) -> Rows:
    """Bruck AllGather (any N): at step k rank r sends the blocks r … r+c−1 it holds to r − 2^k,
    c = min(2^k, N − 2^k). ⌈log2 N⌉ steps, f·M sent (MPICH ``allgather.c`` Bruck)."""
    ranks, n = np.asarray(ranks), len(ranks)
    out, k = [], 0
    r = np.arange(n)
    while (1 << k) < n:
        dist = 1 << k
        count = min(dist, n - dist)
        blocks = (r[:, None] + np.arange(count)[None, :]) % n  # (N, c)
        out.append(Rows.of(k, ranks[r][:, None, None], ranks[(r - dist) % n][:, None, None],
                           shards[blocks], Op.COPY))
        k += 1
    return concat(*out)
