"""Leaf-spine fat tree (``TopologyKind.TREE``) adjustments, spec collectives.md §2.5 (X01–X03, all [D]).

Setup (spec A12): one NIC of B per GPU to a leaf switch, n_l GPUs per leaf, leaf uplinks oversubscribed s:1
(uplink capacity n_l·B/s per direction), ranks placed leaf-contiguously, perfect ECMP. A step in which c of a
leaf's n_l ranks send across the spine runs at max(1, s·c/n_l) times its switch time. Each function returns
the *extra* bandwidth time over the ideal-switch formula as a coefficient of M/B, so tree cost = switch cost
+ coefficient·M/B; with one leaf or s = 1 every coefficient is 0 (the ideal switch, spec §2.5).

A partly filled last leaf (``distcalc.topology.build.tree_leaf_size``: N not a multiple of n_l, n_l a power
of two, so every leaf starts at a multiple of n_l) is the same leaf switch with fewer GPUs plugged in: its
uplinks stay n_l·B/s, as a leaf's uplinks are cabled to the spines whatever its host ports hold (a k-port
leaf of a folded Clos has k/2 up and k/2 down ports, Al-Fares et al. SIGCOMM 2008). Leaf 0 is then always
full and each formula below holds unchanged: one crossing flow per leaf (ring, binomial, linear, chain) is
one flow on any leaf; a leaf of c ≤ n_l ranks carries at most as many shift-pattern crossings
(``_shift_factor``) and c·(N − c)/N ≤ n_l·(N − n_l)/N direct-exchange bytes ((c − n_l)(N − c − n_l) ≤ 0);
XOR patterns need N a power of two, where a power-of-two leaf divides N. [D]; the simulator, which routes
every transfer over these links, agrees exactly (tests/test_tree_any_n.py).
"""

from __future__ import annotations

from distcalc.collective.types import ceil_log2, floor_log2


def _xor_factor(distance: int, leaf: int, leaves: int, s: float) -> float:
    # Partner rank XOR distance: stays in the leaf iff distance < n_l and n_l is a multiple of 2·distance.
    if leaves <= 1 or (distance < leaf and leaf % (2 * distance) == 0):
        return 1.0
    return max(1.0, s)


def _shift_factor(shift: int, n: int, leaf: int, leaves: int, s: float) -> float:
    # Partner (rank + shift) mod N: count the leaf's ranks whose partner is in another leaf. On the cycle of N
    # ranks an arc of c ranks and its rotation by d share max(0, c − d) + max(0, c − (N − d)) ranks wherever
    # the arc starts, so the crossing count depends only on c and is largest for a full leaf (c = n_l): leaf 0
    # sets the step, a partly filled last leaf included.
    if leaves <= 1:
        return 1.0
    d = shift % n
    stay = max(0, leaf - d) + max(0, d - (n - leaf))
    crossing = leaf - min(stay, leaf)
    return max(1.0, s * crossing / leaf)


def _single_flow_factor(leaf: int, leaves: int, s: float) -> float:
    # One flow per leaf crosses the spine: it gets min(B, n_l·B/s).
    return 1.0 if leaves <= 1 else max(1.0, s / leaf)


def ring_extra(steps: int, n: int, leaf: int, leaves: int, s: float) -> float:
    """X01 topology-aware ring: every step's M/N block crosses each leaf boundary once, so the bandwidth term
    is multiplied by max(1, s/n_l). Returns steps·(1/N)·(factor − 1). Source: [D]; Zahavi et al. 2012."""
    return steps / n * (_single_flow_factor(leaf, leaves, s) - 1.0)


def _crosses(distance: int, leaf: int) -> bool:
    return distance >= leaf or leaf % (2 * distance) != 0


def rabenseifner_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """X02 half: Rabenseifner's recursive halving runs distance 1 first with M/2 (MPICH allreduce.c), so partner
    distance 2^k carries M/2^(k+1); steps with 2^k ≥ n_l carry all of a leaf's flows across the spine (×s).
    Rabenseifner AR = 2×. Source: [D] spec X02."""
    return sum((_xor_factor(2 ** k, leaf, leaves, s) - 1.0) / 2 ** (k + 1) for k in range(floor_log2(n)))


def mpich_halving_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """Recursive-halving RS (MPICH red_scat.c: distance N/2 first with M/2) and recursive-doubling AG (MPICH
    allgather.c: distance 1 first with M/N): the message at distance 2^k is 2^k·M/N (×s when it crosses).
    Source: [D]; agrees with the simulator (sim_to_collective note 10b)."""
    return sum((_xor_factor(2 ** k, leaf, leaves, s) - 1.0) * 2 ** k / n for k in range(floor_log2(n)))


def doubling_full_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """Recursive doubling AR: every rank exchanges M at distance 2^k (×s when it crosses). Source: [D] (X02 rule
    applied to full-size steps)."""
    return sum(_xor_factor(2 ** k, leaf, leaves, s) - 1.0 for k in range(ceil_log2(n)))


def binomial_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """Binomial Broadcast/Reduce (MPICH order, mask descending): M per step; at a crossing distance the senders are
    multiples of 2·distance, so at most one flow per leaf crosses (×max(1, s/n_l)). Source: [D]; agrees with the
    simulator (sim_to_collective note 10a)."""
    factor = _single_flow_factor(leaf, leaves, s) - 1.0
    return sum(factor for k in range(ceil_log2(n)) if _crosses(2 ** k, leaf))


def binomial_gather_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """Binomial Gather/Scatter: the step at mask m is bounded by the root's flow of min(m, N − m)·M/N; once it
    crosses the spine it does so alone (×max(1, s/n_l)). Source: [D]; agrees with the simulator."""
    factor = _single_flow_factor(leaf, leaves, s) - 1.0
    return sum(min(2 ** k, n - 2 ** k) / n * factor for k in range(ceil_log2(n)) if _crosses(2 ** k, leaf))


def bruck_allgather_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """Bruck AllGather: step k sends min(2^k, N − 2^k)·M/N to rank − 2^k (shift pattern). Source: [D]."""
    return sum(min(2 ** k, n - 2 ** k) / n * (_shift_factor(2 ** k, n, leaf, leaves, s) - 1.0)
               for k in range(ceil_log2(n)))


def bruck_alltoall_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """Bruck AllToAll: step k sends the blocks whose distance has bit k set, cnt_k·M/N, to rank − 2^k.
    Source: [D]; agrees with the simulator."""
    total = 0.0
    for k in range(ceil_log2(n)):
        count = sum(1 for d in range(1, n) if d >> k & 1)
        total += count / n * (_shift_factor(2 ** k, n, leaf, leaves, s) - 1.0)
    return total


def pairwise_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """Pairwise AllToAll: step j sends M/N to rank + j. Source: [D]."""
    return sum((_shift_factor(j, n, leaf, leaves, s) - 1.0) / n for j in range(1, n))


def direct_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """X03 direct AllToAll (and direct RS/AG): α + max(f, s·(N − n_l)/N)·M/B; returns the excess over f.
    Source: [D] spec X03; Prisacari et al. ICS'13."""
    f = (n - 1) / n
    return 0.0 if leaves <= 1 else max(f, s * (n - leaf) / n) - f


def linear_gather_extra(n: int, leaf: int, leaves: int, s: float) -> float:
    """Linear Gather/Scatter: one block per step; the N − n_l blocks from other leaves each cross the spine alone
    at min(B, n_l·B/s): [(n_l − 1) + (N − n_l)·max(1, s/n_l)]·M/(N·B) in all. Source: [D]; agrees with the
    simulator (sim_to_collective note 10c)."""
    return (n - leaf) / n * (_single_flow_factor(leaf, leaves, s) - 1.0)
