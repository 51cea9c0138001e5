"""Typed records of what the step-time blocks (:mod:`distcalc.analyze.blocks`) compute: one frozen dataclass per
block, one field per term, named with its unit (``_s`` seconds, ``_ranks`` a group size, ``parameters`` a count).

Every field is an array over the block's rows, broadcast back to the batch by
:func:`distcalc.analyze.block_rows.run_block`, except the fields declared with :func:`kept` (the priced message
lists the reports read), which it passes through as they are; a field that is itself one of these records is
broadcast field by field. Each field's comment names what it is and the formula it comes from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Field metadata key: False for a field :func:`distcalc.analyze.block_rows.run_block` passes through unbroadcast.
PER_ROW = "per_row"

#: A priced message list: (:class:`distcalc.traffic.Message`, seconds of one call, algorithm per tier) triples,
#: as :func:`distcalc.analyze.comm.message_times` returns them.
Priced = list[tuple[Any, Any, Any]]


def kept() -> Any:
    """A field that is not an array over rows (a priced message list): passed through as the block made it."""
    return field(metadata={PER_ROW: False})


@dataclass(frozen=True, slots=True)
class MicroBatchTerms:
    """One micro-batch's per-layer and head terms (:func:`distcalc.analyze.blocks.micro_batch_block`). Layer
    times are the dense/MoE mix by the model's MoE-layer fraction; compute times are at the slowest GPU's pace
    (× :attr:`slowest_gpu_factor`)."""

    forward_s: Any  #: one layer's forward compute (distcalc.compute.layer_times)
    backward_s: Any  #: one layer's backward compute, dgrad + wgrad (distcalc.compute.layer_times)
    recompute_s: Any  #: one layer's recomputed forward under the configured recompute (layer_times)
    backward_wgrad_s: Any  #: one layer's weight-gradient GEMMs (Zero Bubble's W pass; layer_times)
    backward_dgrad_s: Any  #: one layer's input-gradient part of the backward (layer_times)
    forward_attention_s: Any  #: one layer's attention core, forward (the ring-CP overlap window; layer_times)
    tp_forward_s: Any  #: exposed (non-overlappable) TP collectives of one layer's forward (traffic.tp_layer_messages)
    tp_backward_s: Any  #: exposed TP collectives of one layer's backward and recompute (tp_layer_messages)
    tp_overlappable_s: Any  #: TP collectives that may run beside the backward GEMMs, on the link
    tp_overlappable_exposed_s: Any  #: their excess over tp_overlap_efficiency × (dgrad + wgrad) (analyze.tp_async)
    tp_on_link_s: Any  #: every TP collective of one layer, on the link
    cp_forward_s: Any  #: exposed CP messages of one layer's forward (ring excess: analyze.cp_ring / torch_cp)
    cp_exposed_s: Any  #: exposed CP messages of one layer, forward + backward
    ep_forward_s: Any  #: EP AllToAll of one layer's forward × MoE-layer fraction (traffic.ep_layer_messages)
    ep_all_s: Any  #: EP AllToAll of one layer, forward + backward, × MoE-layer fraction
    moe_fraction: Any  #: MoE layers / layers of the model
    moe_extra_compute_s: Any  #: one MoE layer's compute (fwd + bwd + recompute) beyond a dense layer's
    ep_per_moe_layer_s: Any  #: EP AllToAll of one MoE layer (ep_all_s / moe_fraction)
    embedding_forward_s: Any  #: input embedding forward (distcalc.compute.head_times)
    embedding_backward_s: Any  #: input embedding backward (head_times)
    output_forward_s: Any  #: output layer + loss forward (head_times)
    output_backward_s: Any  #: output layer + loss backward (head_times)
    output_wgrad_s: Any  #: output layer's weight-gradient GEMM (head_times)
    slowest_gpu_factor: Any  #: the slowest of the job's GPUs' compute time factor (variability.slowest_gpu_factor)
    embedding_tp_s: Any  #: the embedding's forward TP collective (traffic.tp_embedding_messages)
    output_tp_s: Any  #: the output layer's TP collectives (tp_embedding_messages, the rest)
    messages: Priced = kept()  #: every priced layer message, then the head's


@dataclass(frozen=True, slots=True)
class BoundaryTerms:
    """One pipeline boundary (:func:`distcalc.analyze.blocks.boundary_block`)."""

    p2p_transfer_s: Any  #: one chunk boundary's Send/Recv, both directions (traffic.pp_boundary_messages)
    messages: Priced = kept()  #: the priced boundary messages


@dataclass(frozen=True, slots=True)
class HsdpTimes:
    """Seconds of ONE instance of each HSDP collective (:func:`distcalc.analyze.hsdp.hsdp_times`)."""

    unit_gather_s: Any  #: one FSDP unit's AllGather in the shard group
    unit_reduce_scatter_s: Any  #: one unit's ReduceScatter in the shard group
    root_gather_s: Any  #: the root unit's AllGather in the shard group
    root_reduce_scatter_s: Any  #: the root unit's ReduceScatter in the shard group
    zero3_grad_reduce_s: Any  #: whole-model ReduceScatter in the shard group + replicate-group AllReduce
    zero3_forward_gather_s: Any  #: whole-model forward AllGather in the shard group
    zero3_backward_gather_s: Any  #: whole-model backward AllGather in the shard group
    unit_all_reduce_s: Any  #: one unit's gradient-shard AllReduce over the replicate group
    root_all_reduce_s: Any  #: the root unit's gradient-shard AllReduce over the replicate group
    zero_group_ranks: Any  #: ranks the states are sharded over (the shard group)


@dataclass(frozen=True, slots=True)
class DeepSpeedTimes:
    """Seconds and counts of DeepSpeed's ZeRO-3 (:func:`distcalc.analyze.deepspeed_zero3.deepspeed_times`)."""

    gather_s: Any  #: one block's gathered elements in fetches_per_block AllGathers
    first_bucket_s: Any  #: the first prefetch bucket's AllGather
    embed_gather_s: Any  #: the embedding's AllGather
    head_gather_s: Any  #: the output layer's AllGather
    reduce_s: Any  #: one block's share of the bucketed gradient ReduceScatter
    last_bucket_s: Any  #: the last gradient bucket's ReduceScatter
    kept_units: Any  #: blocks kept gathered between forward and backward (max_reuse_distance)
    embed_kept: Any  #: 1 where the embedding stays gathered into the backward
    prefetch: Any  #: 1 where the prefetcher runs (prefetch bucket > 0 and live-parameter limit allows)
    regathered: Any  #: fraction of the forward's gathered elements gathered again in backward
    grad_elements: Any  #: gradient elements reduced per step on this rank
    copy_kernels: Any  #: gradient copy kernels per step (deepspeed_grad_copy_s)


@dataclass(frozen=True, slots=True)
class DpTerms:
    """One instance of each data-parallel message and the tied-embedding sync
    (:func:`distcalc.analyze.blocks.dp_block`); routed-expert collectives over the expert-DP group are added to
    the first five."""

    grad_all_reduce_s: Any  #: gradient AllReduce (traffic.dp_gradient_messages, ZeRO 0)
    grad_reduce_scatter_s: Any  #: gradient ReduceScatter (ZeRO 1, 2)
    param_all_gather_s: Any  #: updated-parameter AllGather, one pass (ZeRO 1, 2)
    zero3_forward_gather_s: Any  #: ZeRO-3 forward AllGather (HSDP: shard group)
    zero3_backward_gather_s: Any  #: ZeRO-3 backward AllGather (HSDP: shard group; DeepSpeed: released share)
    fsdp_unit_gather_s: Any  #: one FSDP unit's AllGather (blocks.fsdp_unit_messages; HSDP, DeepSpeed: theirs)
    fsdp_unit_reduce_scatter_s: Any  #: one FSDP unit's ReduceScatter (likewise)
    fsdp_root_gather_s: Any  #: the root unit's AllGather (embedding, output layer)
    fsdp_root_reduce_scatter_s: Any  #: the root unit's ReduceScatter
    hsdp_unit_all_reduce_s: Any  #: one unit's replicate-group AllReduce (HSDP; else 0)
    hsdp_root_all_reduce_s: Any  #: the root unit's replicate-group AllReduce (HSDP; else 0)
    bucket_all_reduce_s: Any  #: the last gradient bucket's AllReduce (blocks.bucket_messages)
    bucket_reduce_scatter_s: Any  #: the last gradient bucket's ReduceScatter
    bucket_all_gather_s: Any  #: the first parameter bucket's AllGather
    zero3_grad_reduce_s: Any  #: ZeRO-3's gradient reduction (HSDP: + the replicate AllReduce)
    dp_group_ranks: Any  #: ranks of the DP group (dp·cp)
    zero_group_ranks: Any  #: ranks ZeRO-3 shards the states over (HSDP: the shard group)
    expert_dp_group_ranks: Any  #: ranks of the expert-DP group (blocks.expert_dp_key)
    parameters_per_gpu: Any  #: parameters of the largest stage on one GPU (blocks.stage_parameters)
    expert_parameters_per_gpu: Any  #: its routed-expert share (blocks.stage_parameter_split)
    fsdp_unit_parameters: Any  #: one FSDP unit's parameters on this rank (blocks.fsdp_unit_parameters)
    fsdp_root_parameters: Any  #: the root unit's parameters on this rank
    embedding_sync_s: Any  #: tied-embedding gradient AllReduce, first + last stage
    deepspeed: DeepSpeedTimes | None  #: DeepSpeed's ZeRO-3 terms, where it prices ZeRO-3 that way
    messages: Priced = kept()  #: the five DP messages (dp_gradient_messages order)
    expert_messages: Priced = kept()  #: their routed-expert counterparts over the expert-DP group
    sync_messages: Priced = kept()  #: the tied-embedding sync
