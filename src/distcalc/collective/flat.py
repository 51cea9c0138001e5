"""α-β formulas for flat topologies: an ideal switch (one port of B per GPU) and a physical ring (1D torus).

Symbols: N ranks, M bytes (NCCL convention, see :mod:`distcalc.collective.types`), B per-link per-direction
bandwidth (B/s), α per-step latency (s), f = (N−1)/N, L = ⌈log2 N⌉, p' = 2^⌊log2 N⌋. γ = 0.
Every function returns :class:`~distcalc.collective.types.Terms` and works elementwise on NumPy arrays of M.
IDs (F01 …) are those of the spec (docs/spec/collectives.md §2.1/2.2) and of ``tests/data/reference_cases.csv``.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from distcalc.collective.types import Terms, ceil_log2, floor_log2, is_pow2, simple, subtree_blocks


# --------------------------------------------------------------------------- rings
def ring_allreduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F01 unidirectional ring AllReduce (RS + AG): 2(N−1)α + 2f·M/B; sends 2f·M.
    Assumes one port (switch) or one ring direction. Source: nccl-tests doc/PERFORMANCE.md L54-63;
    NCCL src/graph/tuning.cc L289 (nsteps = 2(N−1)); Patarasuk & Yuan 2009 [V]."""
    f = (n - 1) / n
    return simple(2 * (n - 1), a, 2 * f * m / b, 2 * f * m)


def ring_reduce_scatter(n: int, m: Any, b: float, a: float) -> Terms:
    """F04/F05 unidirectional ring ReduceScatter or AllGather: (N−1)α + f·M/B; sends f·M.
    Source: MPICH red_scat.c / allgather.c "Cost = (p-1).alpha + n.((p-1)/p).beta"; nccl-tests
    PERFORMANCE.md L75, L93; NCCL tuning.cc L289-291 [V]."""
    f = (n - 1) / n
    return simple(n - 1, a, f * m / b, f * m)


def bidirectional_ring_allreduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F02 two counter-rotating rings (M/2 each) on a physical ring with two neighbour links per GPU:
    2(N−1)α + f·M/B; sends 2f·M. N = 2 has one link pair, so it falls back to F01. Source: [D] docs/spec/collectives.md §2.1."""
    if n <= 2:
        return ring_allreduce(n, m, b, a)
    f = (n - 1) / n
    return simple(2 * (n - 1), a, f * m / b, 2 * f * m)


def bidirectional_ring_reduce_scatter(n: int, m: Any, b: float, a: float) -> Terms:
    """F06 two counter-rotating rings RS/AG: (N−1)α + f·M/(2B); sends f·M (F04 at N = 2). Source: [D]."""
    if n <= 2:
        return ring_reduce_scatter(n, m, b, a)
    f = (n - 1) / n
    return simple(n - 1, a, f * m / (2 * b), f * m)


def bucket_reduce_scatter(n: int, m: Any, b: float, a: float) -> Terms:
    """F03 1D torus shortest-path "bucket both ways" RS/AG: ⌊N/2⌋α + f·M/(2B) (f·M/B at N = 2); sends f·M.
    Source: scaling-book sharding.md L305-317 (⌈N/2⌉ hops of 2V/N at W_bidir = 2B) [V]."""
    f = (n - 1) / n
    return simple(n // 2, a, f * m / (b if n <= 2 else 2 * b), f * m)


def bucket_allreduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F03 AllReduce = RS + AG bucket: 2⌊N/2⌋α + f·M/B (M/B at N = 2); sends 2f·M.
    Source: scaling-book sharding.md L406-410 (AR = 2× RS) [V]."""
    return double(bucket_reduce_scatter(n, m, b, a))


def _mirrored_single_instance_factor(n: int) -> float:
    # A ring of 2 has one link per direction, so the mirrored pair cannot use two ports (spec F28).
    return 2.0 if n == 2 else 1.0


def mirrored_halving_reduce_scatter(n: int, m: Any, b: float, a: float) -> Terms:
    """F28 1D torus recursive halving at distance 2^s, mirrored pair on both ports (power-of-two N):
    log2N·α + log2N·M/(4B) (single instance log2N·M/(2B), used at N = 2); sends f·M. Source: [D] spec F28."""
    lg = floor_log2(n)
    f = (n - 1) / n
    return simple(lg, a, _mirrored_single_instance_factor(n) * lg * m / (4 * b), f * m)


def swing_delta(s: int) -> int:
    """δ(s) = |(1 − (−2)^(s+1))/3| = 1, 1, 3, 5, 11, 21, … (Swing peer distance, libswing rhos[])."""
    return abs((1 - (-2) ** (s + 1)) // 3)


def swing_reduce_scatter(n: int, m: Any, b: float, a: float) -> Terms:
    """F29 Swing bandwidth-optimal RS on a 1D torus, mirrored on 2 ports (power-of-two N):
    log2N·α + Σ_{s<log2N} δ(s)/2^(s+2)·M/B (×2 at N = 2, one link pair); sends f·M.
    Source: De Sensi et al. NSDI'24 (ρ(s) from libswing) [V]; link-load sum [D] spec F29."""
    lg = floor_log2(n)
    coefficient = sum(swing_delta(s) / 2 ** (s + 2) for s in range(lg))
    f = (n - 1) / n
    return simple(lg, a, _mirrored_single_instance_factor(n) * coefficient * m / b, f * m)


def double(terms: Terms) -> Terms:
    """AllReduce = ReduceScatter + AllGather of the same cost (every term doubles)."""
    return Terms(2 * terms.steps, 2 * terms.alpha_term_s, 2 * terms.bw_term_s, 2 * terms.sent_bytes)


# --------------------------------------------------------------------------- recursive / tree algorithms
def recursive_doubling_allreduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F13 recursive doubling AllReduce: log2N(α + M/B); sends log2N·M. Non-power-of-two N folds to p' with a
    pre- and post-step: (⌊log2N⌋+2)(α + M/B), sends (⌊log2N⌋+1)·M. Source: MPICH allreduce.c "Cost = lgp.alpha
    + n.lgp.beta + n.lgp.gamma" [V]; docs/spec/collectives.md §4.7."""
    lg = floor_log2(n)
    if is_pow2(n):
        return simple(lg, a, lg * m / b, lg * m)
    return simple(lg + 2, a, (lg + 2) * m / b, (lg + 1) * m)


def rabenseifner_allreduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F14 Rabenseifner (recursive-halving RS + recursive-doubling AG): 2log2N·α + 2f·M/B; sends 2f·M.
    Non-power-of-two: fold to p' ranks, RS/AG on p', unfold: (2⌊log2N⌋+2)α + (2 + 2(p'−1)/p')·M/B; sends
    2(p'−1)/p'·M + M. The MPICH comment (and spec F14) prints (2f+2) with p for p'; the schedule runs its RS/AG on
    p' ranks, which the simulator confirms (sim_to_collective note 1).
    Source: MPICH allreduce.c v1.68 header "Cost = 2.lgp.alpha + 2.n.((p-1)/p).beta + …" [V]."""
    lg = floor_log2(n)
    f = (n - 1) / n
    if is_pow2(n):
        return simple(2 * lg, a, 2 * f * m / b, 2 * f * m)
    fp = (2**lg - 1) / 2**lg
    return simple(2 * lg + 2, a, (2 * fp + 2) * m / b, (2 * fp + 1) * m)


def recursive_halving_reduce_scatter(n: int, m: Any, b: float, a: float) -> Terms:
    """F15 recursive halving RS: log2N·α + f·M/B; sends f·M. Non-power-of-two (MPICH red_scat.c: fold the first
    2·rem ranks, halve on p' ranks where the new ranks < rem own two shards, send the folded ranks' shards back):
    (⌊log2N⌋+2)α + [M + (p'−1 + Σ_{j<log2 p'} min(2^j, rem))·M/N + M/N]/B with rem = N − p'; the folded rank sends
    M. Spec F15's (1+f)·M/B under-estimates this schedule (sim_to_collective note 3).
    Source: MPICH red_scat.c [V]; exact step loads [D], confirmed by the simulator."""
    lg = floor_log2(n)
    f = (n - 1) / n
    if is_pow2(n):
        return simple(lg, a, f * m / b, f * m)
    p = 2**lg
    rem = n - p
    shards = p - 1 + sum(min(2**j, rem) for j in range(lg)) + 1
    return simple(lg + 2, a, (m + shards * m / n) / b, m + 0 * m)


def bruck_allgather(n: int, m: Any, b: float, a: float) -> Terms:
    """F16 Bruck (any N) / recursive doubling (power-of-two N) AllGather: ⌈log2N⌉α + f·M/B; sends f·M.
    Source: MPICH allgather.c "Cost = lgp.alpha + n.((p-1)/p).beta" [V]."""
    f = (n - 1) / n
    return simple(ceil_log2(n), a, f * m / b, f * m)


def binomial_broadcast(n: int, m: Any, b: float, a: float) -> Terms:
    """F08 binomial-tree Broadcast: L(α + M/B); the root sends L·M. Source: Thakur et al. 2005 §4.1 [P]."""
    lg = ceil_log2(n)
    return simple(lg, a, lg * m / b, lg * m)


def binomial_reduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F10 binomial-tree Reduce: L(α + M/B); each GPU sends M once. Source: MPICH reduce.c
    "Cost = lgp.alpha + n.lgp.beta + n.lgp.gamma" [V]."""
    lg = ceil_log2(n)
    return simple(lg, a, lg * m / b, m + 0 * m)


def binomial_allreduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F17 binomial reduce + binomial broadcast (the seed tool's Tree: 2⌈log2N⌉(α + M/B)); the root sends
    L·M. Source: Thakur et al. 2005 [P]."""
    lg = ceil_log2(n)
    return simple(2 * lg, a, 2 * lg * m / b, lg * m)


def double_binary_tree_allreduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F18 double binary tree, pipelined (NCCL Tree, idealised): 2L·α + c·M/B, sends c·M, with c = 2 (M/2 up,
    2·M/2 down to two children in one tree, M/2 up as a leaf of the other), 1 at N = 2 (one tree), and 1.5 at
    N = 3, where both of NCCL's trees are chains (0 ← 2 ← 1 and 1 ← 0 ← 2): no GPU has two children, the
    busiest (rank 0) sends M/2 down one chain and M/2 up and down the other. Over N = 3 … 299 only N = 3
    differs from 2 (``nccl_dtree_parents``). The bandwidth part is the k → ∞ limit: a pipeline of k segments
    takes k + 2D − 1 α-steps, priced by ``pipelined_tree.dbt_allreduce_segments``. Source: NCCL trees.cc
    L32/L90; tuning.cc L378-381 (tree algBw = busBw/2) [V]; egress load [D]."""
    lg = ceil_log2(n)
    factor = dbt_egress_factor(n)
    return simple(2 * lg, a, factor * m / b, factor * m)


def dbt_egress_factor(n: int) -> float:
    """Bytes the busiest GPU of NCCL's double binary tree over ``n`` ranks sends, per byte of M (F18)."""
    return {1: 0.0, 2: 1.0, 3: 1.5}.get(n, 2.0)


def scatter_allgather_broadcast(n: int, m: Any, b: float, a: float) -> Terms:
    """F09 van de Geijn Broadcast (binomial scatter + ring allgather): (L+N−1)α + 2f·M/B; sends 2f·M.
    Source: MPICH bcast_intra_scatter_ring_allgather.c "Total Cost = (lgp+p-1).alpha + 2.n.((p-1)/p).beta" [V]."""
    f = (n - 1) / n
    return simple(ceil_log2(n) + n - 1, a, 2 * f * m / b, 2 * f * m)


def rabenseifner_reduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F11 Rabenseifner Reduce (recursive-halving RS + binomial gather): 2log2N·α + 2f·M/B; sends 2f·M (the CSV's
    value; the executed schedule's busiest GPU sends f·M + M/2). Non-power-of-two: fold to p':
    (2⌊log2N⌋+1)α + (1 + 2(p'−1)/p')·M/B, sends max(M, (p'−1)/p'·M + M/2) (sim_to_collective note 2; the MPICH
    comment prints (2f+1) with p for p'). Source: MPICH reduce.c MPIR_Reduce_redscat_gather comment [V]."""
    lg = floor_log2(n)
    f = (n - 1) / n
    if is_pow2(n):
        return simple(2 * lg, a, 2 * f * m / b, 2 * f * m)
    fp = (2**lg - 1) / 2**lg
    return simple(2 * lg + 1, a, (2 * fp + 1) * m / b, max(1.0, fp + 0.5) * m)


def binomial_gather(n: int, m: Any, b: float, a: float) -> Terms:
    """Binomial-tree Gather (root output M): L·α + f·M/B (the root's port receives f·M). The busiest sender is
    the root of the largest subtree, max(N − 2^(L−1), 2^(L−2)) blocks of M/N.
    Source: MPICH gather.c "Cost = lgp.alpha + n.((p-1)/p).beta" [P]; sender volume [D]."""
    f = (n - 1) / n
    return simple(ceil_log2(n), a, f * m / b, subtree_blocks(n) * m / n)


def binomial_scatter(n: int, m: Any, b: float, a: float) -> Terms:
    """Binomial-tree Scatter (root input M): L·α + f·M/B; the root sends f·M. Source: MPICH scatter.c
    "Cost = lgp.alpha + n.((p-1)/p).beta" [P]."""
    f = (n - 1) / n
    return simple(ceil_log2(n), a, f * m / b, f * m)


def linear_gather(n: int, m: Any, b: float, a: float) -> Terms:
    """Linear Gather: the root receives from each rank in turn: (N−1)α + f·M/B; each rank sends M/N.
    Source: MPICH linear gather (Thakur et al. 2005 §4) [P]."""
    f = (n - 1) / n
    return simple(n - 1, a, f * m / b, m / n)


def linear_scatter(n: int, m: Any, b: float, a: float) -> Terms:
    """Linear Scatter: the root sends to each rank in turn: (N−1)α + f·M/B; the root sends f·M. [P] as above."""
    f = (n - 1) / n
    return simple(n - 1, a, f * m / b, f * m)


def ring_gather(n: int, m: Any, b: float, a: float, two_sided: bool = True, scatter: bool = False) -> Terms:
    """Gather/Scatter on a ring (or a Hamiltonian cycle/path): blocks flow to (from) the root along both ring
    directions, ⌈(N−1)/2⌉ steps of α + (M/N)/B (one-sided chain without a cycle: N−1 steps, f·M/B). Gather: the
    root's neighbour forwards its half; Scatter: the root sends every block, f·M. Source: [D] (root-link load)."""
    hops = -(-(n - 1) // 2) if two_sided else n - 1
    return simple(hops, a, hops * m / (n * b), (n - 1) / n * m if scatter else hops * m / n)


# --------------------------------------------------------------------------- switch-only direct / in-network
def direct_reduce_scatter(n: int, m: Any, b: float, a: float) -> Terms:
    """F19 direct one-shot RS/AG on a non-blocking switch: α + f·M/B; sends f·M. AR = 2× (F19).
    Source: ASTRA-sim AllToAll.cc L17-27 ("direct", parallel_reduce = n−1) on a Switch dimension [V]."""
    f = (n - 1) / n
    return simple(1, a, f * m / b, f * m)


def in_network_allreduce(n: int, m: Any, b: float, a: float) -> Terms:
    """F20 switch with in-network reduction (NVLS/SHARP), ideal: 2α + M/B; sends M.
    Source: scaling-book gpus.md "In network reductions" (T = bytes / GPU egress bandwidth) [V]; NCCL NVLS
    model tuning.cc L139-144, L309-323 (efficiency η not applied here)."""
    return simple(2, a, m / b, m + 0 * m)


def pairwise_alltoall(n: int, m: Any, b: float, a: float) -> Terms:
    """F22 pairwise exchange AllToAll: (N−1)α + f·M/B; sends f·M. Source: MPICH alltoall.c
    "Cost = (p-1).alpha + n.beta" (n = data sent to others = f·M); nccl-tests alltoall busbw (n−1)/n [V]."""
    f = (n - 1) / n
    return simple(n - 1, a, f * m / b, f * m)


def direct_alltoall(n: int, m: Any, b: float, a: float) -> Terms:
    """F23 direct AllToAll (all sends posted at once, NCCL grouped send/recv): α + f·M/B; sends f·M.
    Source: [D] port bound."""
    f = (n - 1) / n
    return simple(1, a, f * m / b, f * m)


def bruck_alltoall(n: int, m: Any, b: float, a: float) -> Terms:
    """F24 Bruck AllToAll: L·α + L·M/(2B); sends L·M/2 (power-of-two N). Any N: step k moves the blocks whose
    distance d has bit k set, so bandwidth and volume are Σ_{d=1}^{N−1} popcount(d)·M/N (= L·M/2 for powers of
    two; sim_to_collective note 4). Source: MPICH alltoall.c "lgp.alpha + (n/2).lgp.beta" [V]."""
    blocks = sum(bin(d).count("1") for d in range(1, n))
    return simple(ceil_log2(n), a, blocks * m / (n * b), blocks * m / n)


def ring_alltoall(n: int, m: Any, b: float, a: float) -> Terms:
    """F25 unidirectional-ring store-and-forward AllToAll: (N−1)α + (N−1)/2·M/B; sends (N−1)·M/2.
    Source: ASTRA-sim Ring.cc L46-47, L83-85; scaling-book sharding.md Q10 [V]."""
    return simple(n - 1, a, (n - 1) / 2 * m / b, (n - 1) / 2 * m)


def torus1d_alltoall(n: int, m: Any, b: float, a: float) -> Terms:
    """F26 bidirectional 1D torus shortest-path AllToAll: ⌊N/2⌋α + (N² − [N odd])/(8N)·M/B (M/(2B) at N = 2);
    sends f·M — own data only, as reference_cases.csv counts it (forwarded blocks are not counted, unlike F25).
    Source: [D]; scaling-book sharding.md L452 (AllToAll = AllGather/4 on a bidirectional ring)."""
    f = (n - 1) / n
    load = 0.5 if n == 2 else (n * n - (n % 2)) / (8 * n)
    return simple(n // 2, a, load * m / b, f * m)


# --------------------------------------------------------------------------- pipelined chain (general)
def pipelined_chain(m: Any, hops: Sequence[tuple[int, float, float]]) -> Terms:
    """F07/F12 pipelined chain Broadcast/Reduce with k segments over hop classes ``(count, α_h, B_h)``:
    T(k) = Σ_h count_h·(α_h + M/(k·B_h)) + (k−1)·max_h(α_h + M/(k·B_h)); k ≥ 1 is the integer optimum
    (floor/ceil of k* = √(M·(Σ count_h/B_h − 1/B_b)/α_b) for each candidate bottleneck b). With N−1 equal hops
    this is (N−2+k)(α + M/(kB)), k* = √((N−2)M/(αB)) (spec F07). Sends M. Source: [D]; NCCL runs Bcast/Reduce
    on rings with nsteps = N (tuning.cc L294)."""
    m_arr = np.asarray(m, dtype=float)
    hops = [(c, al, bw) for c, al, bw in hops if c > 0]
    if not hops:
        from distcalc.collective.types import zero_terms
        return zero_terms(m)
    sum_alpha = sum(c * al for c, al, _ in hops)
    sum_inv = sum(c / bw for c, _, bw in hops)
    candidates = [np.ones_like(m_arr)]
    for _, al, bw in hops:
        spread = np.maximum(sum_inv - 1.0 / bw, 0.0)
        if al > 0:
            k_star = np.sqrt(m_arr * spread / al)
        else:
            k_star = np.maximum(m_arr, 1.0)
        candidates += [np.maximum(np.floor(k_star), 1.0), np.maximum(np.ceil(k_star), 1.0)]
    ks = np.stack(candidates)
    seg = m_arr / ks
    per_hop = np.stack([al + seg / bw for _, al, bw in hops])  # (classes, cand, …)
    bottleneck = per_hop.max(axis=0)
    total = sum_alpha + seg * sum_inv + (ks - 1) * bottleneck
    best = np.argmin(total, axis=0)
    pick = lambda arr: np.take_along_axis(arr, best[None, ...], axis=0)[0]  # noqa: E731
    k = pick(ks)
    alphas = np.array([al for _, al, _ in hops]).reshape((-1,) + (1,) * ks.ndim)
    bn_index = np.argmax(per_hop, axis=0)
    bn_alpha = np.take_along_axis(np.broadcast_to(alphas, per_hop.shape), bn_index[None, ...], axis=0)[0]
    alpha_term = sum_alpha + (k - 1) * pick(bn_alpha)
    time = pick(total)
    steps = sum(c for c, _, _ in hops) - 1 + k
    if np.ndim(m) == 0:
        return Terms(int(steps), float(alpha_term), float(time - alpha_term), float(m))
    return Terms(steps.astype(int), alpha_term, time - alpha_term, m_arr.copy())


def uniform_chain(n: int, m: Any, b: float, a: float) -> Terms:
    """F07/F12 on N−1 equal hops: (N−2+k)(α + M/(kB)) at the optimal integer k; sends M. Source: [D]."""
    return pipelined_chain(m, [(n - 1, a, b)])
