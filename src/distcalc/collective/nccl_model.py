"""NCCL's own AllReduce cost model (v2.30.7 ``src/graph/tuning.cc``), Ring and Tree with the Simple protocol,
Hopper constants, 16 channels — docs/spec/collectives.md §5 and CSV rows H07/H08 (assumption A11).

time = latency + M / algBw, with busBw = B1 on one node and min(B1, g·B2) across nodes (A11 takes g·B2: an
assumption of the worked numbers, not NCCL's topology search; the cap keeps the model above the lower bound). These are model outputs of NCCL's tuner, not measurements; the
latencies are NCCL's constants (µs), independent of the topology's α1/α2.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.collective.types import Terms, floor_log2

N_CHANNELS = 16
US = 1e-6
BASE_LATENCY_SIMPLE_US = {"ring": 8.4, "tree": 8.4}  # tuning.cc L149-155 (baseLat, Simple)
HW_LATENCY_SIMPLE_US = {  # tuning.cc L156-176 (hwLat, Simple): (NVLINK, NET)
    "ring": (3.4, 14.0),
    "tree": (4.0, 14.0),
}
NET_OVERHEAD_SIMPLE_US = 1.0 * 3  # tuning.cc L228-233: 1 µs on Intel/other CPUs, ×3 for Simple
RING_PLATEAU_FACTOR = 1.4  # tuning.cc L647-650: multi-node Ring Simple AR latency ×1.4 (sm80+)
TREE_ALLREDUCE_EFFICIENCY = 0.92  # tuning.cc L327-349: Tree AR bw = min(0.92·busBw, nCh·perChMaxTreeBw)
HOPPER_TREE_MAX_BW_PER_CHANNEL = (38.7e9, 41.4e9, 36.0e9)  # tuning.cc L184-211: 1 / 2 / >2 nodes
#: tuning.cc L623-627: Simple row of treeCorrectionFactor, powers of two from 64 B (index log2(nBytes >> 6)).
TREE_CORRECTION_SIMPLE = (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8,
                          .9, .9, .9)


def _bus_bandwidth(g: int, n: int, b1: float, b2: float) -> float:
    # A11 says busBw = g·B2 across nodes; capped at B1 so that a node's NICs cannot outrun its NVLink
    # (identical for the spec's A4 values, g·B2 = 4e11 < B1 = 4.5e11).
    return b1 if n == 1 else min(b1, g * b2)


def nccl_ring_allreduce(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """H07 NCCL Ring/Simple AllReduce: nsteps = 2(N−1), nInter = 2(n−1) (tuning.cc L289, L411-412);
    latency = baseLat + (nsteps − nInter)·max(hwLat_NVLINK, netOverhead) + nInter·hwLat_NET, ×1.4 when
    n > 1 and M/(nCh·N) ≥ 64 (L405-409, L647-650); algBw = busBw·N/nsteps (L376-382). Sends 2f·M.
    α1/α2 are not used (NCCL's constants)."""
    total = g * n
    nsteps, n_inter = 2 * (total - 1), 2 * (n - 1)
    intra, net = HW_LATENCY_SIMPLE_US["ring"]
    latency = (BASE_LATENCY_SIMPLE_US["ring"] + (nsteps - n_inter) * max(intra, NET_OVERHEAD_SIMPLE_US)
               + n_inter * net) * US
    alg_bw = _bus_bandwidth(g, n, b1, b2) * total / nsteps
    if isinstance(m, float):
        plateau = n > 1 and m / (N_CHANNELS * total) >= 64
        return Terms(nsteps, latency * (RING_PLATEAU_FACTOR if plateau else 1.0), m / alg_bw,
                     2 * (total - 1) / total * m)
    m_arr = np.asarray(m, dtype=float)
    plateau = (n > 1) & (m_arr / (N_CHANNELS * total) >= 64)
    alpha = latency * np.where(plateau, RING_PLATEAU_FACTOR, 1.0)
    return Terms(nsteps, alpha, m_arr / alg_bw, 2 * (total - 1) / total * m_arr)


def tree_correction(m: Any) -> Any:
    """treeCorrectionFactor[Simple][log2(nBytes >> 6)] for 64 B ≤ M < 64·2^24 B, else 1 (tuning.cc L640-642)."""
    if isinstance(m, float):
        index = (int(m) >> 6).bit_length() - 1
        return TREE_CORRECTION_SIMPLE[index] if 0 <= index < len(TREE_CORRECTION_SIMPLE) else 1.0
    m_arr = np.asarray(m, dtype=float)
    index = np.floor(np.log2(np.maximum(m_arr, 1.0) / 64.0)).astype(int)
    table = np.array(TREE_CORRECTION_SIMPLE)
    valid = (m_arr >= 64) & (index < len(table))
    return np.where(valid, table[np.clip(index, 0, len(table) - 1)], 1.0)


def nccl_tree_allreduce(g: int, n: int, m: Any, b1: float, a1: float, b2: float, a2: float) -> Terms:
    """H08 NCCL Tree/Simple AllReduce: latency = baseLat + 2((g−1)·hwLat_NVLINK + log2i(n)·hwLat_NET)
    (tuning.cc L415-417); bw = min(0.92·busBw, nCh·perChMaxTreeBw) (L327-349), algBw = bw·0.5 (L376-382),
    × treeCorrectionFactor (L623-642). Sends 2M. α1/α2 are not used (NCCL's constants)."""
    lg = floor_log2(n)
    intra, net = HW_LATENCY_SIMPLE_US["tree"]
    latency = (BASE_LATENCY_SIMPLE_US["tree"] + 2 * ((g - 1) * intra + lg * net)) * US
    cap = N_CHANNELS * HOPPER_TREE_MAX_BW_PER_CHANNEL[min(n, 3) - 1]
    bus = min(TREE_ALLREDUCE_EFFICIENCY * _bus_bandwidth(g, n, b1, b2), cap)
    steps = 2 * (g - 1) + 2 * lg
    if isinstance(m, float):
        return Terms(steps, latency, m / (bus * 0.5 * tree_correction(m)), 2 * m)
    m_arr = np.asarray(m, dtype=float)
    return Terms(steps, latency + 0 * m_arr, m_arr / (bus * 0.5 * tree_correction(m_arr)), 2 * m_arr)
