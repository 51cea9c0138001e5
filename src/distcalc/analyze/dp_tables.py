"""The DP gradient collectives of every (configuration, ZeRO stage) as per-row tables: the step model prices
:func:`distcalc.traffic.dp_gradient_messages` once per union row and picks each configuration's ZeRO stage
from these tables, keeping the products and the order of summation of the scalar sum."""

from __future__ import annotations

import numpy as np

from distcalc.analyze.terms import DpCollectives


def dp_tables(t: DpCollectives, on: np.ndarray, z3_backward: np.ndarray | None = None,
               allreduce_sharded: bool = False, rs3: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """Per (union row, ZeRO stage 0–3) tables ``K1..K4`` (flattened row-major) such that
    ``Σ_i count_i·t_i`` of :func:`distcalc.traffic.dp_gradient_messages` (``t`` per call, the fields of
    :class:`~distcalc.analyze.terms.DpCollectives`: ``grad_all_reduce_s``, ``grad_reduce_scatter_s``,
    ``param_all_gather_s``, ``zero3_forward_gather_s``, ``zero3_backward_gather_s``) is
    ``((m·K1 + K2) + m·K3) + m·K4`` — the same products and the same order of summation, zeros elsewhere
    (``on`` = 0 where the DP group has one rank). ``z3_backward``: the per-micro-batch ZeRO-3 backward term
    (ReduceScatter + backward AllGather taken together, for exposed times) in place of ``grad_reduce_scatter_s``
    and ``zero3_backward_gather_s`` separately; ``rs3``: ZeRO-3's gradient reduction where it differs from
    ``grad_reduce_scatter_s`` (HSDP: shard-group ReduceScatter + replicate AllReduce). ``allreduce_sharded``:
    ZeRO-1 all-reduces the gradients (``grad_all_reduce_s``) instead of reduce-scattering them (DeepSpeed
    BF16_Optimizer)."""
    ar, rs, ag = t.grad_all_reduce_s, t.grad_reduce_scatter_s, t.param_all_gather_s
    ag3_f, ag3_b = t.zero3_forward_gather_s, t.zero3_backward_gather_s
    zero = np.zeros_like(rs)
    b3, a3 = (rs if rs3 is None else rs3, ag3_b) if z3_backward is None else (z3_backward, zero)
    k1 = by_zero_stage(zero, zero, rs, b3) * on[:, None]
    k2 = by_zero_stage(ar, (ar if allreduce_sharded else rs) + ag, ag, zero) * on[:, None]
    k3 = by_zero_stage(zero, zero, zero, ag3_f) * on[:, None]
    k4 = by_zero_stage(zero, zero, zero, a3) * on[:, None]
    return tuple(k.ravel() for k in (k1, k2, k3, k4))


def by_zero_stage(*columns: np.ndarray) -> np.ndarray:
    """One row per union row, one column per ZeRO stage: ``np.stack(columns, axis=1)``; one union row (one
    configuration) as one C call (``np.array``) transposed as a view — the same values, and a (1, 4) array
    is laid out the same either way (np.stack is Python-level; a large transposed batch would cost a copy)."""
    if columns[0].size == 1:
        return np.array(columns).T
    return np.stack(columns, axis=1)


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
