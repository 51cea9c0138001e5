"""The DP gradient collectives of every (configuration, ZeRO stage) as per-row tables: the step model prices
:func:`distcalc.traffic.dp_gradient_messages` once per union row and picks each configuration's ZeRO stage
from these tables, keeping the products and the order of summation of the scalar sum."""

from __future__ import annotations

import numpy as np


def dp_tables(t: list[np.ndarray], on: np.ndarray, z3_backward: np.ndarray | None = None,
               allreduce_sharded: bool = False, rs3: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Per (union row, ZeRO stage 0–3) tables ``K1..K4`` (flattened row-major) such that
    ``Σ_i count_i·t_i`` of :func:`distcalc.traffic.dp_gradient_messages` (0 AllReduce, 1 ReduceScatter,
    2 step AllGather, 3/4 ZeRO-3 AllGathers) is ``((m·K1 + K2) + m·K3) + m·K4`` — the same products and
    the same order of summation, zeros elsewhere (``on`` = 0 where the DP group has one rank).
    ``z3_backward``: the per-micro-batch ZeRO-3 backward term (ReduceScatter + backward AllGather taken
    together, for exposed times) in place of ``t1`` and ``t4`` separately; ``rs3``: ZeRO-3's gradient reduction
    where it differs from ``t1`` (HSDP: shard-group ReduceScatter + replicate AllReduce). ``allreduce_sharded``: ZeRO-1 all-reduces
    the gradients (``t0``) instead of reduce-scattering them (DeepSpeed BF16_Optimizer)."""
    t0, t1, t2, t3, t4 = t
    zero = np.zeros_like(t1)
    b3, a3 = (t1 if rs3 is None else rs3, t4) if z3_backward is None else (z3_backward, zero)
    k1 = np.stack([zero, zero, t1, b3], axis=1) * on[:, None]
    k2 = np.stack([t0, (t0 if allreduce_sharded else t1) + t2, t2, zero], axis=1) * on[:, None]
    k3 = np.stack([zero, zero, zero, t3], axis=1) * on[:, None]
    k4 = np.stack([zero, zero, zero, a3], axis=1) * on[:, None]
    return tuple(k.ravel() for k in (k1, k2, k3, k4))


def dp_sum(tables: tuple[np.ndarray, ...], take, mf: np.ndarray, any_ge2: bool, any_z3: bool) -> np.ndarray:
    """``((m·K1 + K2) + m·K3) + m·K4`` gathered per configuration (terms that are 0 everywhere skipped)."""
    k1, k2, k3, k4 = tables
    acc = take(k2)
    if any_ge2:
        acc = np.multiply(mf, take(k1)) + acc
    if any_z3:
        acc += mf * take(k3)
        acc += mf * take(k4)
    return acc
