"""Two-level hierarchical formulas (docs/spec/collectives.md §2.4, H01–H06): g GPUs per node on an NVLink switch
(B1 per GPU per direction, α1), n nodes on a rail-optimised network with one NIC per GPU (B2, α2); N = g·n.
Each function takes ``(g, n, m, b1, a1, b2, a2)`` and returns :class:`~distcalc.collective.types.Terms`
(elementwise in M). With n = 1 they reduce to the single-switch formulas on (B1, α1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.collective.flat import dbt_egress_factor, pipelined_chain
from distcalc.collective.types import Terms, ceil_log2, subtree_blocks


def hierarchical_reduce_scatter(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """H05 RS: intra-node ring RS on M, then inter-node ring RS on M/g along each rail:
    (g−1)α1 + (g−1)/g·M/B1 + (n−1)α2 + (n−1)/n·(M/g)/B2; sends f·M. AllGather runs the same phases in
    reverse (inter AG to M/g, then intra AG) at the same cost. Source: [D]; ASTRA-sim Sys.cc L729 (AG visits
    dimensions in reverse) [V]."""
    alpha = (g - 1) * a1 + (n - 1) * a2
    bw = (g - 1) / g * m / b1 + (n - 1) / n * (m / g) / b2
    sent = (g - 1) / g * m + (n - 1) / n * m / g
    return Terms((g - 1) + (n - 1), alpha, bw, sent)


def hierarchical_allreduce(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """H01 (the seed's hierarchical AR): intra ring RS → inter ring AR on M/g per rail → intra ring AG:
    2(g−1)α1 + 2(g−1)/g·M/B1 + 2(n−1)α2 + 2(n−1)/n·(M/g)/B2; sends 2f·M.
    Source: ASTRA-sim Sys.cc L839-906 (RS dim 0, AR dim 1, AG dim 0); scaling-book gpus.md "Cross-node
    collectives" [V]."""
    rs = hierarchical_reduce_scatter(g, n, m, b1, a1, b2, a2)
    return Terms(2 * rs.steps, 2 * rs.alpha_term_s, 2 * rs.bw_term_s, 2 * rs.sent_bytes)


def rail_ring_allreduce(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """H02 flat ring over all N GPUs as g rail-aligned rings (NCCL-like); per ring 2(n−1) of the 2(N−1) steps
    cross the network: [2(N−1) − 2(n−1)]α1 + 2(n−1)α2 + 2(N−1)·max((g−1)/(g·B1), 1/(g·B2))·M/N (only the
    flat ring on the NVLink switch, 2(N−1)·M/(N·B1), when n = 1); sends 2f·M. Source: NCCL tuning.cc L411-412 (nInterSteps = 2(nNodes−1)) [V];
    bandwidth [D]."""
    total = g * n
    per_byte = max((g - 1) / (g * b1), 1 / (g * b2)) if n > 1 else 1 / b1
    alpha = (2 * (total - 1) - 2 * (n - 1)) * a1 + 2 * (n - 1) * a2
    f = (total - 1) / total
    return Terms(2 * (total - 1), alpha, 2 * (total - 1) * per_byte * m / total, 2 * f * m)


def rail_ring_channels_phase(g: int, n: int, m: float, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """One ReduceScatter (or AllGather) phase of H02's g rings run as independent channels with α in flight
    (the simulator's event timing of the executed schedule; AllReduce is two phases back to back). Each ring
    hop is an intra-node hop (α1, service s1 = (g−1)·b/B1: the GPU's NVSwitch port carries g − 1 rings) or
    the node's exit hop (α2, s2 = b/B2), b = M/(N·g), in the cyclic order of n blocks of g − 1 intra hops and
    one exit hop. Over S = N − 1 steps a dependency path stays on consecutive hops of its ring, r_h ≥ 1 steps
    on hop h, collecting r_h·s_h and one α_h per hop (it leaves a hop by a data dependency, or ends), so

        T = max over windows W of consecutive hops, |W| ≤ S, of Σ_W (α_h + s_h) + (S − |W|)·max_W s_h:

    the walk W = S hops at small M, the busiest hop's queue at large M. The α term is the maximising
    window's Σ α. [D]; checked against the event-driven simulation of the schedule (tests)."""
    total = g * n
    steps = total - 1
    b = m / (total * g)
    inter = np.tile(np.concatenate([np.zeros(g - 1, dtype=bool), [True]]), n)
    alpha = np.where(inter, a2, a1)
    service = np.where(inter, b / b2, (g - 1) * b / b1)
    reps = -(-(total + steps) // total)
    alpha_cum = np.concatenate([[0.0], np.cumsum(np.tile(alpha, reps))])
    cost_cum = np.concatenate([[0.0], np.cumsum(np.tile(alpha + service, reps))])
    inter_cum = np.concatenate([[0], np.cumsum(np.tile(inter, reps))])
    start = np.arange(total)[:, None]
    length = np.arange(1, steps + 1)[None, :]
    end = start + length
    widest = np.where(inter_cum[end] > inter_cum[start], b / b2, (g - 1) * b / b1)
    value = cost_cum[end] - cost_cum[start] + (steps - length) * widest
    best = np.unravel_index(int(np.argmax(value)), value.shape)
    alpha_term = float(alpha_cum[end[best]] - alpha_cum[start[best[0], 0]])
    return Terms(steps, alpha_term, float(value[best]) - alpha_term, (total - 1) / total * m)


def chain_dbt_allreduce(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """H03 NCCL Tree: intra-node chain + inter-node double binary tree, pipelined (k → ∞):
    2(g−1)α1 + 2⌈log2 n⌉α2 + max(2(g−1)/g·M/B1, c_n·M/(g·B2)), c_n = 0, 1, 1.5, 2 for n = 1, 2, 3, ≥ 4 (the
    busiest head's rail egress in the node tree, F18's factor: at n = 3 both trees are chains); the busiest GPU
    sends (2(g−1) + c_n)/g·M.

    Intra-node term: g channels, one per NIC rail, each on M/g, whose chains start at their own rail's GPU
    (``pipelined_tree.chain_dbt_trees``), so every GPU is a chain's head once and its tail once and sends
    2(g−1)·M/g over NVLink. The spec prints 2M/B1 (a GPU in the middle of every chain); the executed schedule
    and its finite-k form (``pipelined_tree.chain_dbt_allreduce_segments``, k → ∞) give 2(g−1)/g, which at
    g = 2 is F18's own two-rank factor 1. reference_cases.csv's one-node rows (N = 2, 8) are checked with the
    corrected term (tests/test_collective_reference.py ``CORRECTED``).
    Source: NCCL tuning.cc L415-417 (latency 2((ppn−1)·intra + log2(nNodes)·inter)) [V]; bandwidth [D]."""
    c_n = dbt_egress_factor(n)
    intra = 2 * (g - 1) / g * m / b1
    bw = max(intra, c_n * m / (g * b2)) if isinstance(m, float) else np.maximum(intra, c_n * m / (g * b2))
    lg = ceil_log2(n)
    return Terms(2 * (g - 1) + 2 * lg, 2 * (g - 1) * a1 + 2 * lg * a2, bw, (2 * (g - 1) + c_n) / g * m)


def astra_baseline_allreduce(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """H04 ASTRA-sim "baseline": a full ring AR on each dimension with the full M:
    2(g−1)α1 + 2(g−1)/g·M/B1 + 2(n−1)α2 + 2(n−1)/n·M/B2; sends 2(g−1)/g·M + 2(n−1)/n·M.
    Source: ASTRA-sim Sys.cc L768-787 (Baseline branch); Ring.cc L71-73 (AR keeps final_data_size) [V]."""
    alpha = 2 * (g - 1) * a1 + 2 * (n - 1) * a2
    bw = 2 * (g - 1) / g * m / b1 + 2 * (n - 1) / n * m / b2
    sent = 2 * (g - 1) / g * m + 2 * (n - 1) / n * m
    return Terms(2 * (g - 1) + 2 * (n - 1), alpha, bw, sent)


def hierarchical_alltoall(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """H06 direct AllToAll with NVLink and NICs used concurrently: max(α1, α2) + max((g−1)/N·M/B1,
    (N−g)/N·M/B2) (α1 only when n = 1); sends f·M. Source: scaling-book gpus.md cross-node all-to-all [V]."""
    total = g * n
    alpha = max(a1, a2) if n > 1 else a1
    intra, inter = (g - 1) / total * m / b1, (total - g) / total * m / b2
    bw = max(intra, inter) if isinstance(m, float) else np.maximum(intra, inter)
    return Terms(1, alpha, bw, (total - 1) / total * m)


def hierarchical_broadcast(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """Two-level Broadcast (and, mirrored, Reduce): binomial scatter of M inside the root's node
    (⌈log2 g⌉α1 + (g−1)/g·M/B1), binomial broadcast of the M/g shards along every rail
    (⌈log2 n⌉(α2 + (M/g)/B2)), ring allgather inside every node ((g−1)α1 + (g−1)/g·M/B1). The root sends
    2(g−1)/g·M + ⌈log2 n⌉·M/g. Source: [D] (van de Geijn F09 inside nodes, binomial F08 across nodes)."""
    lg_g, lg_n = ceil_log2(g), ceil_log2(n)
    alpha = (lg_g + g - 1) * a1 + lg_n * a2
    bw = 2 * (g - 1) / g * m / b1 + lg_n * (m / g) / b2
    sent = 2 * (g - 1) / g * m + lg_n * m / g
    return Terms(lg_g + (g - 1) + lg_n, alpha, bw, sent)


def hierarchical_reduce(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """Two-level Reduce, the mirror of :func:`hierarchical_broadcast` (intra ring RS, binomial reduce of the M/g
    shards along every rail, binomial gather to the root inside its node): same time; the busiest GPU (on the
    root's node) sends (g−1)/g·M + max(blocks(g), [n > 1])·M/g (sim_to_collective note 5). Source: [D]."""
    terms = hierarchical_broadcast(g, n, m, b1, a1, b2, a2)
    sent = (g - 1) / g * m + max(subtree_blocks(g), 1 if n > 1 else 0) * m / g
    return Terms(terms.steps, terms.alpha_term_s, terms.bw_term_s, sent)


def hierarchical_scatter(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """Two-level Scatter, the mirror of :func:`hierarchical_gather`: same time; the root sends f·M. Source: [D]."""
    terms = hierarchical_gather(g, n, m, b1, a1, b2, a2)
    return Terms(terms.steps, terms.alpha_term_s, terms.bw_term_s, (g * n - 1) / (g * n) * m)


def hierarchical_gather(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """Two-level Gather (Scatter mirrored): binomial gather of the M/N blocks along every rail to the root's
    node (⌈log2 n⌉α2 + (n−1)/n·(M/g)/B2), then binomial gather inside the root's node
    (⌈log2 g⌉α1 + (g−1)/g·M/B1). The busiest sender is the root of the largest subtree at one of the levels
    (the in-node subtree root is a rail root, which only receives on its rail): max(blocks(g)·M/g, blocks(n)·M/N).
    Source: [D] (MPICH binomial gather cost per level); volume agrees with the simulator."""
    lg_g, lg_n = ceil_log2(g), ceil_log2(n)
    alpha = lg_n * a2 + lg_g * a1
    bw = (n - 1) / n * (m / g) / b2 + (g - 1) / g * m / b1
    sent = max(subtree_blocks(g) / g, subtree_blocks(n) / (g * n)) * m
    return Terms(lg_n + lg_g, alpha, bw, sent)


def hierarchical_chain(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """Pipelined chain Broadcast/Reduce through all N GPUs node by node: N−n NVLink hops (α1, B1) and n−1
    network hops (α2, B2), optimal segment count (see :func:`~distcalc.collective.flat.pipelined_chain`).
    Source: [D] (F07 with two hop classes)."""
    return pipelined_chain(m, [(g * n - n, a1, b1), (n - 1, a2, b2)])
