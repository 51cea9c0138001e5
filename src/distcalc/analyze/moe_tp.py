"""Tensor-parallel collectives of MoE layers with expert tensor parallelism (expert TP = TP).

Megatron-Core requires sequence parallelism for MoE with TP > 1. A MoE layer then has no AllGather of its
``b·s·h`` input before the MLP: the router and the permute work on the rank's ``T/t`` sequence-sharded tokens,
the dispatcher (``moe/token_dispatcher.py``, all-to-all or, with EP = 1, a no-op exchange) sends their ``k``
copies to the expert owners, and ``gather_from_sequence_parallel_region`` over the expert-TP group AllGathers
the received slots — ``k·c·T`` of them per expert-TP group, ``c`` the capacity factor — so that every TP rank
runs its column/row shards of the local experts on all of them; a ReduceScatter over the same group returns
each rank's share before the combine. Backward runs the conjugates: a ReduceScatter of the gathered slots'
gradients (overlapped with the experts' weight-gradient GEMMs like the dense column-parallel conjugate) and an
AllGather. The expert GEMMs take the gathered slots as saved, so there is no re-gather for the weight
gradient. Shared experts are a dense MLP with the usual sequence-parallel AllGather / ReduceScatter of
``b·s·h``; without them the MoE layer has only the attention block's.

With a fraction ``f`` of the layers MoE, the per-layer messages are the ``f``-weighted mix: the dense MLP's
share of :func:`distcalc.traffic.tp_layer_messages` (half of each sequence-parallel count) is taken out for
the MoE layers that have no shared experts, and the expert messages above come in with count ``f`` each.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.parallel import Recompute
from distcalc.traffic import Comm, Dim, Message, Phase, activation_bytes

ArrayLike = Any


def moe_tp_messages(dense: list[Message], micro_batch: ArrayLike, seq_len: ArrayLike, hidden: int,
                    bytes_per_element: float, tp: ArrayLike, sequence_parallel: ArrayLike, recompute: ArrayLike,
                    cp: ArrayLike, top_k: int, capacity_factor: float, moe_fraction: float,
                    shared_experts: bool) -> list[Message]:
    """``dense`` (:func:`distcalc.traffic.tp_layer_messages` of the same arguments) mixed with the MoE layers'
    expert-TP collectives (module docstring); ``dense`` unchanged where SP is off or TP is 1."""
    on = np.where((np.asarray(tp) > 1) & (np.asarray(sequence_parallel) != 0), 1.0, 0.0)
    if moe_fraction <= 0 or not on.any():
        return dense
    # the MLP half of each SP message leaves the MoE layers that have no shared expert
    keep = 1.0 - on * moe_fraction * (0.0 if shared_experts else 0.5)
    mixed = [Message(m.dim, m.collective, m.size_bytes, m.count * (keep if _sp_message(m) else 1.0), m.phase,
                     m.overlappable, m.note) for m in dense]
    slots = activation_bytes(micro_batch, np.divide(seq_len, cp), hidden, bytes_per_element) * top_k * capacity_factor
    count = on * moe_fraction
    full = Recompute.full_weight(recompute)
    tp_ = Dim.TP
    return mixed + [
        Message(tp_, Comm.ALL_GATHER, slots, count, Phase.FORWARD, note="expert TP AllGather of dispatched tokens"),
        Message(tp_, Comm.REDUCE_SCATTER, slots, count, Phase.FORWARD, note="expert TP ReduceScatter before combine"),
        Message(tp_, Comm.ALL_GATHER, slots, count, Phase.BACKWARD, note="conjugate of expert TP ReduceScatter"),
        Message(tp_, Comm.REDUCE_SCATTER, slots, count, Phase.BACKWARD, True,
                "conjugate of expert TP AllGather, overlaps wgrad"),
        Message(tp_, Comm.ALL_GATHER, slots, count * full, Phase.RECOMPUTE, note="expert TP full recompute fwd"),
        Message(tp_, Comm.REDUCE_SCATTER, slots, count * full, Phase.RECOMPUTE, note="expert TP full recompute fwd"),
    ]


def _sp_message(message: Message) -> bool:
    """The sequence-parallel AllGather / ReduceScatter of :func:`distcalc.traffic.tp_layer_messages` (two per
    layer, one for attention and one for the MLP)."""
    return message.collective in (Comm.ALL_GATHER, Comm.REDUCE_SCATTER)
