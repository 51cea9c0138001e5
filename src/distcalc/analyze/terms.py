"""Typed records of the step model's intermediate terms (:mod:`distcalc.analyze.core`).

Each record holds NumPy arrays over the same rows (the distinct union rows of the step model, or every
configuration once gathered); they name what the formulas of :mod:`distcalc.analyze.core` cite.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Generic, TypeVar

import numpy as np

from distcalc.analyze.block_terms import BoundaryTerms, DpTerms, MicroBatchTerms

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DpCollectives:
    """Seconds of one call of each data-parallel collective of :func:`distcalc.traffic.dp_gradient_messages`
    (Rajbhandari et al. 2020 §7.2), in that function's message order: either the time on the link or the part
    of it exposed beyond the compute it overlaps. How many times each runs per step depends on the ZeRO stage
    and the micro-batch count (:func:`distcalc.analyze.dp_tables.dp_tables`)."""

    grad_all_reduce_s: Any  #: gradient AllReduce (ZeRO 0; ZeRO-1 all-reducing sharded gradients)
    grad_reduce_scatter_s: Any  #: gradient ReduceScatter (ZeRO 1, 2)
    param_all_gather_s: Any  #: updated-parameter AllGather after the optimizer step (ZeRO 1, 2)
    zero3_forward_gather_s: Any  #: ZeRO-3 parameter AllGather before the forward of a micro-batch
    zero3_backward_gather_s: Any  #: ZeRO-3 parameter AllGather before the backward of a micro-batch

    def in_message_order(self) -> tuple[Any, Any, Any, Any, Any]:
        """The five times in the order of :func:`distcalc.traffic.dp_gradient_messages`."""
        return (self.grad_all_reduce_s, self.grad_reduce_scatter_s, self.param_all_gather_s,
                self.zero3_forward_gather_s, self.zero3_backward_gather_s)


def dp_collectives_of(block: DpTerms, param_gather_passes: Any) -> DpCollectives:
    """The per-call DP collective times that :func:`distcalc.analyze.blocks.dp_block` priced, the step's
    parameter AllGather taken ``param_gather_passes`` times
    (:func:`distcalc.analyze.chained_optimizer.step_param_gather_passes`)."""
    return DpCollectives(block.grad_all_reduce_s, block.grad_reduce_scatter_s,
                         block.param_all_gather_s * param_gather_passes, block.zero3_forward_gather_s,
                         block.zero3_backward_gather_s)



class StagePosition(IntEnum):
    """Where a pipeline stage sits, as the codes of :meth:`ByStage.choose` (an array of them picks per row):
    the step model's slowest stage is the last one unless the first one is as slow (ties), or a middle one
    holds more layers than either end (uneven splits)."""

    LAST = 0
    FIRST = 1
    MIDDLE = 2


@dataclass(frozen=True, slots=True)
class ByStage(Generic[T]):
    """One term of the first, a middle and the last pipeline stage (with one stage, first and last are the
    same stage and hold both ends' terms)."""

    first: T
    middle: T
    last: T

    def choose(self, position: Any) -> Any:
        """The term of the stage at ``position`` (a :class:`StagePosition`, or an array of their codes)."""
        return np.choose(position, (self.last, self.first, self.middle))


@dataclass(frozen=True, slots=True)
class UnionTerms:
    """Every term of the step time that depends only on the union key of :mod:`distcalc.analyze.core`
    (micro-batch shape, degrees, recompute, SP, flash attention, stage split): arrays over the distinct union
    rows, per micro-batch unless named per step. Seconds at the slowest GPU's pace."""

    micro_batch: MicroBatchTerms  #: :func:`distcalc.analyze.blocks.micro_batch_block` (per layer, the ends)
    boundary: BoundaryTerms  #: :func:`distcalc.analyze.blocks.boundary_block` (pipeline Send/Recv)
    dp: DpTerms  #: :func:`distcalc.analyze.blocks.dp_block` (DP collectives, parameters per GPU)
    layers: ByStage[Any]  #: transformer layers per stage
    slowest: Any  #: :class:`StagePosition` code of the slowest stage
    slowest_stage_s: Any  #: one micro-batch's forward + backward on the slowest stage (without P2P)
    mean_stage_s: Any  #: the same averaged over the stages
    stage_weight_grad_s: Any  #: a middle stage's weight-gradient GEMMs (Zero Bubble's deferred W)
    p2p_transfer_s: Any  #: one chunk boundary's Send/Recv, both directions
    dp_active: Any  #: 1.0 where the DP group has more than one rank, else 0.0
    dp_on_link: DpCollectives  #: per call, on the link
    dp_exposed: DpCollectives  #: per call, exposed beyond the compute it overlaps
    zero3_backward_exposed_s: Any  #: ZeRO-3's per-micro-batch backward (ReduceScatter + AllGather), exposed
    zero3_grad_reduce_s: Any  #: ZeRO-3's gradient reduction on the link (HSDP: + replicate AllReduce)
    optimizer_replicated_s: Any  #: optimizer step, per step: no ZeRO
    optimizer_zero1_s: Any  #: ZeRO-1 / distributed optimizer (states sharded)
    optimizer_sharded_s: Any  #: ZeRO-2 (states and gradients sharded)
    optimizer_zero3_s: Any  #: ZeRO-3 (over the ZeRO group; HSDP: the shard group)
    grad_accumulate_s: Any  #: gradient accumulation outside the backward kernels, per micro-batch
    embedding_sync_s: Any  #: tied-embedding gradient AllReduce, per step
    parameters_per_gpu: Any
    gpus: Any
    slowest_gpu_factor: Any
    compute_s: ByStage[Any]  #: compute of each stage position
    ep_exposed_s: ByStage[Any]  #: EP AllToAll of each stage position's MoE layers
    tp_exposed_s: ByStage[Any]  #: exposed TP collectives of each stage position
    tp_on_link_s: ByStage[Any]  #: TP collectives on the link of each stage position
    recompute_s: Any  #: one layer's recomputation
    cp_exposed_s: Any  #: one layer's exposed CP messages
    ep_all_s: Any  #: one MoE layer's share of EP AllToAll, averaged over the layers
    layer_forward_s: Any  #: one layer's forward with its exposed communication
    layer_backward_s: Any  #: one layer's backward (+ recompute) with its exposed communication
    stage_forward_s: Any  #: a middle stage's layers, forward
    stage_backward_s: Any  #: a middle stage's layers, backward
    flops_per_token: Any  #: model forward FLOPs per token
    extra_flops_per_token: Any  #: recomputed forward FLOPs per token (hardware FLOPs: model + these)
