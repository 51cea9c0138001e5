"""DeepSpeed ZeRO-1/2's gradient reduction: one NCCL Reduce per partition owner instead of one ReduceScatter.

DeepSpeed's ZeRO stage 1/2 optimizer with ``reduce_scatter`` on (its default) reduces every gradient bucket by
issuing, for each data-parallel rank that owns a slice of the bucket, a ``dist.reduce`` of that slice to that
rank (``average_tensor``: ``rank_and_offsets``, then ``dist.reduce(grad_slice, dst=dst_rank, async_op=True)`` per
owner; microsoft/DeepSpeed@2151c787, 2022-02-18, ``deepspeed/runtime/zero/stage_1_and_2.py``), all on one
communicator, so the ``n`` reduces run one after another. A ring Reduce of ``S/n`` bytes keeps ``n − 1`` of
the ``n`` ring links busy (the root forwards nothing), for ``(S/n) / B`` seconds at bus bandwidth ``B``
(nccl-tests ``doc/PERFORMANCE.md``: Reduce ``busBw = algBw``); ``n`` of them take ``S / B``, where one
ReduceScatter of ``S`` takes ``S·(n − 1)/n / B`` (``busBw = algBw·(n − 1)/n``). The reduction therefore costs
``n / (n − 1)`` times the ReduceScatter the model prices for ZeRO-1/2 (×1.33 at n = 4, ×1.14 at n = 8); latency
terms are not scaled. The parameter AllGather after the step is an ``all_gather`` (unchanged).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from distcalc.traffic import Comm, Phase



def reduce_to_owners_factor(dp_ranks: Any) -> Any:
    """Time of ``n`` per-owner Reduces over one ReduceScatter of the same gradients: ``n / (n − 1)`` for a
    data-parallel group of ``n`` > 1 ranks, 1 for a single rank (nothing is reduced)."""
    n = np.asarray(dp_ranks, dtype=float)
    if np.any(n < 1):
        raise ValueError(f"dp_ranks {dp_ranks!r} must be at least 1")
    return np.where(n > 1, n / np.maximum(n - 1.0, 1.0), 1.0)


def owner_reduces(entries: list, dp_ranks: Any) -> list:
    """The priced DP messages ``(message, seconds, algorithms)`` with the gradient ReduceScatter's time (the one
    backward ReduceScatter of ``distcalc.traffic.dp_gradient_messages``) scaled by :func:`reduce_to_owners_factor`
    and its note saying so; a list without it is returned as it is."""
    out = list(entries)
    for i, (msg, times, algos) in enumerate(out):
        if msg.collective is Comm.REDUCE_SCATTER and msg.phase is Phase.BACKWARD:
            out[i] = (replace(msg, note=msg.note + " (DeepSpeed: one Reduce per partition owner)"),
                      times * reduce_to_owners_factor(dp_ranks), algos)
    return out
