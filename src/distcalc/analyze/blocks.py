"""The parts of the step-time model that depend on few configuration fields, evaluated once per distinct
combination of those fields and broadcast back (:mod:`distcalc.analyze.block_rows`) — the collective costs and
the kernel-time models are the expensive parts, and a search batch holds few distinct micro-batch shapes and
groups.

* :func:`micro_batch_block` — per layer and per micro-batch: compute (dense/MoE mix), TP/CP/EP
  communication (exposed and on-link), embedding/output head compute and TP collectives; compute times are
  those of the slowest of the ``gpus`` GPUs (:func:`distcalc.variability.slowest_gpu_factor`). Key:
  micro_batch, seq_len, tp, cp, ep, sequence_parallel, recompute, flash_attention, gpus (tp·pp·dp·cp).
* :func:`boundary_block` — one pipeline Send/Recv transfer (+ scatter/gather AllGather). Key: micro_batch,
  seq_len, tp, cp, dp, sequence_parallel, pp > 1.
* :func:`dp_block` — one instance of each DP message and the tied-embedding sync. Key: tp, pp, dp, cp, ep.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from distcalc.analyze.block_terms import BoundaryTerms, DpTerms, MicroBatchTerms
from distcalc.analyze.comm import GroupKey, group_keys, message_times, total
from distcalc.analyze.cp_ring import ring_exposed_s, ring_slowdown
from distcalc.analyze.deepspeed_zero3 import deepspeed_times
from distcalc.analyze.hsdp import hsdp_times
from distcalc.analyze.moe_tp import moe_tp_messages
from distcalc.analyze.options import AnalyzeOptions, ContextParallelAlgorithm, moe_slot_factor
from distcalc.analyze.tp_async import async_exposed_s
from distcalc.analyze.torch_cp import torch_cp_layer_exposed_s, torch_cp_messages
from distcalc.analyze.tp_overlap import userbuffers_exposure
from distcalc.analyze.zero_reduce import owner_reduces
from distcalc.cluster import ClusterSpec
from distcalc.compute import DeviceCompute, ModelDims, head_times, layer_times
from distcalc.compute.attention import CpSplit
from distcalc.compute.moe import router_kernel_counts
from distcalc.model.blocks import tp_syncs_per_layer
from distcalc.parallel import StageLayers, stage_layer_split
from distcalc.software import TORCH_CP_ALGORITHMS
from distcalc.traffic import (Comm, Dim, Message, Phase, cp_layer_messages, dp_gradient_messages, ep_layer_messages,
                              pp_boundary_messages, tp_embedding_messages, tp_layer_messages)
from distcalc.variability import slowest_gpu_factor

MICRO_KEY = ("micro_batch", "seq_len", "tp", "cp", "ep", "sequence_parallel", "recompute", "flash_attention", "gpus")
BOUNDARY_KEY = ("micro_batch", "seq_len", "tp", "cp", "dp", "sequence_parallel", "pp_on")
DP_KEY = ("tp", "pp", "dp", "cp", "ep", "account_for_embedding_and_loss", "first_stage_layers", "last_stage_layers")
#: The columns that carry a :class:`~distcalc.parallel.StageLayers` (derived from the last four of
#: :data:`DP_KEY`) into :func:`dp_block`, so the layer split is computed once per evaluation (analyze.core).
STAGE_LAYER_COLUMNS = ("stage_layers_first", "stage_layers_middle", "stage_layers_last")


def with_stage_layers(c: dict[str, np.ndarray], layers: StageLayers) -> dict[str, np.ndarray]:
    """``c`` with the per-row stage layer split ``layers`` added as :data:`STAGE_LAYER_COLUMNS`."""
    return {**c, **dict(zip(STAGE_LAYER_COLUMNS, layers))}


def stage_layers_of(c: dict[str, np.ndarray]) -> StageLayers:
    """The stage layer split that :func:`with_stage_layers` put in ``c``."""
    return StageLayers(*(c[k] for k in STAGE_LAYER_COLUMNS))


def _keys(c: dict[str, np.ndarray], o: AnalyzeOptions) -> dict[Dim, GroupKey]:
    return group_keys(c["tp"], c["pp"], c["dp"], c["cp"], c["ep"], o.rank_order)


def _mix(dense, moe, frac: float, field: str) -> np.ndarray:
    value = 0.0
    if dense is not None:
        value = value + (1.0 - frac) * np.asarray(getattr(dense, field))
    if moe is not None:
        value = value + frac * np.asarray(getattr(moe, field))
    return np.asarray(value, dtype=float)


def stage_moe_layers(d: ModelDims, lps_first: np.ndarray, lps_mid: np.ndarray,
                     lps_last: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MoE layers held by the first, the busiest middle and the last pipeline stage, the layers in order
    (DeepSeek's dense layers come first: ``first_k_dense_replace``, Megatron-Core ``--moe-layer-freq``): the
    first stage holds layers [0, lps_first), the last [L − lps_last, L); a middle stage at most lps_mid of the
    MoE layers between them. A single stage holds them all."""
    L = d.layers
    first = np.clip(np.rint(lps_first), 0, L).astype(np.int64)
    last_start = np.clip(L - np.rint(lps_last), 0, L).astype(np.int64)
    middle = np.minimum(np.rint(lps_mid), np.maximum(d.moe_layers_between(first, np.maximum(last_start, first)), 0))
    return (d.moe_layers_between(0, first).astype(float), middle.astype(float),
            d.moe_layers_between(last_start, L).astype(float))


def micro_batch_block(d: ModelDims, device: DeviceCompute, cluster: ClusterSpec, c: dict[str, np.ndarray],
                      o: AnalyzeOptions, memo: dict | None = None) -> MicroBatchTerms:
    """Per-layer and head quantities of one micro-batch (see module docstring). ``memo``: placements
    shared within one evaluation (:func:`distcalc.analyze.comm.placements`)."""
    b, s, tp, cp, ep = c["micro_batch"], c["seq_len"], c["tp"], c["cp"], c["ep"]
    sp, rc, flash = c["sequence_parallel"], c["recompute"], c["flash_attention"]
    shape = tp.shape
    ulysses = 1 if o.cp_algorithm == ContextParallelAlgorithm.ULYSSES else 0
    allgather = 1 if o.cp_algorithm == ContextParallelAlgorithm.ALL_GATHER else 0
    torch_cp = o.cp_algorithm in TORCH_CP_ALGORITHMS  # PyTorch's ring CP (analyze.torch_cp)
    split = (CpSplit.NONE if ulysses else CpSplit.ALLGATHER if allgather else CpSplit.TORCH if torch_cp
             else CpSplit.RING)
    args = dict(micro_batch=b, seq_len=s, tp=tp, cp=cp, sequence_parallel=sp, recompute=rc, flash_attention=flash,
                ep=ep, cp_split=split)
    dense = layer_times(d, device, **args, moe=False) if d.dense_layers else None
    router = router_kernel_counts(o.moe_router_group_limited, o.moe_load_imbalance is None, o.moe_aux_loss)
    moe = (layer_times(d, device, **args, moe=True, capacity_factor=moe_slot_factor(o), router_kernels=router)
           if d.moe_layers else None)
    frac = d.moe_layers / d.layers
    slowest = slowest_gpu_factor(c["gpus"], o.gpu_speed_cv)
    compute = {f: slowest * _mix(dense, moe, frac, f) for f in (
        "forward_s", "backward_s", "recompute_s", "backward_wgrad_s", "backward_dgrad_s", "forward_attention_s")}
    keys = _keys(c, o)
    h, act = d.hidden, device.activation_bytes  # bytes per activation element of the configured dtype
    tp_msgs = tp_layer_messages(b, s, h, act, tp, sp, rc, cp, tp_syncs_per_layer(d.parallel_block))
    if d.moe_layers:  # expert tensor parallelism: the MoE layers' TP collectives (distcalc.analyze.moe_tp)
        tp_msgs = moe_tp_messages(tp_msgs, b, s, h, act, tp, sp, rc, cp, max(d.experts_per_token, 1),
                                  moe_slot_factor(o), frac, d.shared_ffn > 0)
    torch_gather = o.cp_algorithm == ContextParallelAlgorithm.TORCH_ALLGATHER
    msgs = (tp_msgs
            + (torch_cp_messages(b, s, d.heads * d.head_dim, act, tp, cp, torch_gather, rc) if torch_cp else
               cp_layer_messages(b, s, d.kv_heads * d.head_dim, d.heads * d.head_dim, act, tp, cp, ulysses, rc,
                                 allgather))
            + (ep_layer_messages(b, s, h, act, tp, ep, max(d.experts_per_token, 1), sp, moe_slot_factor(o), cp, rc,
                                 int(o.moe_dispatch_probs))
               if d.moe_layers else []))
    head_msgs = tp_embedding_messages(b, s, h, act, tp, sp, cp)
    priced = message_times(cluster, msgs + head_msgs, keys, shape, memo)  # one pricing pass for both lists
    entries, head_entries = priced[:len(msgs)], priced[len(msgs):]
    tp_e = [e for e in entries if e[0].dim == Dim.TP]
    cp_e = [e for e in entries if e[0].dim == Dim.CP]
    ep_e = [e for e in entries if e[0].dim == Dim.EP]

    def crit(msg: Message) -> bool:
        return not msg.overlappable

    tp_fwd = total(tp_e, lambda x: crit(x) and x.phase == Phase.FORWARD)
    tp_bwd = total(tp_e, lambda x: crit(x) and x.phase in (Phase.BACKWARD, Phase.RECOMPUTE))
    tp_ov = total(tp_e, lambda x: x.overlappable)
    window = compute["backward_wgrad_s"] + compute["backward_dgrad_s"]
    tp_ov_exposed = tp_ov - np.minimum(tp_ov, o.tp_overlap_efficiency * window)
    if o.tp_async_backward:  # NCCL collectives beside their GEMMs, partly hidden (analyze.tp_async)
        tp_ov_exposed = np.minimum(tp_ov_exposed, async_exposed_s(tp_ov, window))
    if o.tp_comm_overlap and dense is not None:  # TE userbuffers: every SP collective beside its GEMM
        def one(kind: Comm) -> np.ndarray:
            return next(t for m, t, _ in tp_e if m.collective == kind and m.phase == Phase.FORWARD)
        ub = userbuffers_exposure(one(Comm.ALL_GATHER), one(Comm.REDUCE_SCATTER),
                                  *(tuple(slowest * np.asarray(g, dtype=float) for g in gemms) for gemms in
                                    (dense.gemms_forward_s, dense.gemms_dgrad_s, dense.gemms_wgrad_s)),
                                  tp, device.sm_count, np.asarray(rc) == 2, d.parallel_block)
        use = (np.asarray(sp) != 0) & (np.asarray(tp) > 1)
        tp_fwd = np.where(use, (1.0 - frac) * ub.forward_s + frac * tp_fwd, tp_fwd)
        tp_bwd = np.where(use, (1.0 - frac) * ub.backward_s + frac * tp_bwd, tp_bwd)
        tp_ov_exposed = np.where(use, (1.0 - frac) * ub.bulk_s + frac * tp_ov_exposed, tp_ov_exposed)
    attn = compute["forward_attention_s"]
    # ring attention: each step's K/V transfer overlaps the attention of the block already received; the
    # excess is exposed and the overlapped attention runs κ slower (analyze.cp_ring)
    ring_f = total(cp_e, lambda x: x.overlappable and x.phase == Phase.FORWARD)
    ring_b = total(cp_e, lambda x: x.overlappable and x.phase != Phase.FORWARD)
    kappa = ring_slowdown(cp, keys[Dim.CP].stride, device, cluster, o.overlap_compute_slowdown)
    ring_exposed_f, ring_exposed_all = ring_exposed_s(ring_f, ring_b, attn, kappa, cp)
    cp_f = ring_exposed_f + total(cp_e, lambda x: crit(x) and x.phase == Phase.FORWARD)
    cp_all = ring_exposed_all + total(cp_e, lambda x: crit(x))
    if torch_cp:  # what PyTorch's ring CP hides behind its steps (analyze.torch_cp)
        cp_f, cp_all = torch_cp_layer_exposed_s(cp_e, d, device, b, s, tp, cp, slowest, kappa, torch_gather, rc)
    ep_f = total(ep_e, lambda x: x.phase == Phase.FORWARD) * frac
    ep_all = total(ep_e, lambda x: True) * frac
    # what one MoE layer costs beyond a dense one (compute with recomputation; its EP AllToAll apart), for the
    # stages that hold more or fewer MoE layers than the model's average (analyze.core, stage_moe_layers)
    both = dense is not None and moe is not None
    moe_extra = np.asarray(slowest * sum(
        _mix(dense, moe, 1.0, f) - _mix(dense, moe, 0.0, f) for f in ("forward_s", "backward_s", "recompute_s"))
        if both else np.zeros(shape), dtype=float)
    heads = head_times(d, device, b, s, tp, cp, sp, o.cross_entropy)
    embedding_tp = total(head_entries, lambda x: x.phase == Phase.FORWARD and "embedding" in x.note)
    return MicroBatchTerms(
        **compute, tp_forward_s=tp_fwd, tp_backward_s=tp_bwd, tp_overlappable_s=tp_ov,
        tp_overlappable_exposed_s=tp_ov_exposed, tp_on_link_s=total(tp_e, lambda x: True),
        cp_forward_s=cp_f, cp_exposed_s=cp_all, ep_forward_s=ep_f, ep_all_s=ep_all, moe_fraction=np.full(shape, frac),
        moe_extra_compute_s=moe_extra, ep_per_moe_layer_s=ep_all / frac if frac else np.zeros(shape),
        embedding_forward_s=slowest * np.asarray(heads.embedding_forward_s, dtype=float),
        embedding_backward_s=slowest * np.asarray(heads.embedding_backward_s, dtype=float),
        output_forward_s=slowest * np.asarray(heads.output_forward_s, dtype=float),
        output_backward_s=slowest * np.asarray(heads.output_backward_s, dtype=float),
        output_wgrad_s=slowest * np.asarray(heads.output_wgrad_s, dtype=float), slowest_gpu_factor=slowest,
        embedding_tp_s=embedding_tp, output_tp_s=total(head_entries, lambda x: True) - embedding_tp,
        messages=entries + head_entries)


def boundary_block(d: ModelDims, cluster: ClusterSpec, c: dict[str, np.ndarray], o: AnalyzeOptions,
                   memo: dict | None = None, *, activation_bytes: float) -> BoundaryTerms:
    """Time of one pipeline boundary transfer (both directions' messages of one chunk crossing)."""
    msgs = pp_boundary_messages(c["micro_batch"], c["seq_len"], d.hidden, activation_bytes, c["tp"], c["pp"],
                                c["sequence_parallel"], int(o.pipeline_scatter_gather), c["cp"])
    entries = message_times(cluster, msgs, _keys(c, o), c["tp"].shape, memo)
    return BoundaryTerms(p2p_transfer_s=total(entries, lambda x: True), messages=entries)


def stage_parameters(d: ModelDims, tp: Any, pp: Any, ep: Any, split: Any = 0, first: Any = 0, last: Any = 0) -> Any:
    """Parameters per GPU of the largest stage: its layers (experts also split by EP) + embedding and/or head;
    with ``split`` (embedding and loss in the pipeline split) a middle stage's one more layer may be larger;
    with uneven ends (``first``/``last``) the larger end."""
    dense, expert = stage_parameter_split(d, tp, pp, ep, stage_layer_split(d.layers, pp, split, first, last))
    return dense + expert


def stage_parameter_split(d: ModelDims, tp: Any, pp: Any, ep: Any, layers: StageLayers) -> tuple[Any, Any]:
    """(non-expert, routed-expert) parameters per GPU of the stage :func:`stage_parameters` picks, the stages
    holding ``layers`` (:func:`distcalc.parallel.stage_layer_split`): the experts' share is that stage's
    layers × the mean routed-expert parameters of a layer / (t·ep)."""
    expert = d.expert_parameters_per_layer
    per_expert = expert / (np.asarray(tp, dtype=float) * ep)
    per_layer = (d.parameters_per_layer - expert) / tp + per_expert
    lps_first, lps_mid, lps_last = layers
    end_layers = np.maximum(lps_first, lps_last)
    # one stage holds the input embedding and the output layer (the latter only when untied); a pipeline's
    # first stage holds the embedding and its last the output layer (Megatron keeps a copy of a tied
    # embedding on the last stage), so the larger end stage has the larger of the two
    single_stage = d.embedding_parameters + (0 if d.tied_embeddings else d.lm_head_parameters)
    end_extra = np.where(np.asarray(pp) > 1, max(d.embedding_parameters, d.lm_head_parameters), single_stage)
    end = end_layers * per_layer + end_extra / np.asarray(tp, dtype=float)
    mid = np.where(np.asarray(pp) >= 3, lps_mid * per_layer, 0.0)
    total_params = np.maximum(end, mid)
    expert_params = np.where(mid > end, lps_mid, end_layers) * per_expert
    return total_params - expert_params, expert_params


def expert_dp_key(keys: dict[Dim, GroupKey], ep: Any) -> GroupKey:
    """The expert-data-parallel group (Megatron-Core ``expert_data_parallel_group``, expert TP = TP): the
    ``dp·cp/ep`` ranks of the DP group that hold the same experts, at ``ep`` × the DP stride (the EP group is
    the inner, contiguous part of the DP group: :func:`distcalc.analyze.comm.group_keys`)."""
    dp = keys[Dim.DP]
    ep = np.asarray(ep, dtype=np.int64)
    size = np.maximum(np.asarray(dp.size, dtype=np.int64) // np.maximum(ep, 1), 1)
    return GroupKey(size, np.asarray(dp.stride, dtype=np.int64) * ep)


def fsdp_unit_parameters(d: ModelDims, c: dict[str, np.ndarray], ones: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(block, root) parameters of one FSDP unit on this rank: a transformer block after TP and EP division,
    and the root unit (embedding + output layer with one stage, the larger of the two on a pipeline's end
    stages)."""
    tp = np.asarray(c["tp"], dtype=float)
    expert = d.expert_parameters_per_layer
    layer = ((d.parameters_per_layer - expert) / tp + expert / (tp * np.asarray(c["ep"], dtype=float))) * ones
    head = 0 if d.tied_embeddings else d.lm_head_parameters
    root = np.where(np.asarray(c["pp"]) > 1, max(d.embedding_parameters, d.lm_head_parameters),
                    d.embedding_parameters + head) / tp * ones
    return layer, root


def fsdp_unit_messages(d: ModelDims, c: dict[str, np.ndarray], o: AnalyzeOptions, ones: np.ndarray) -> list[Message]:
    """One FSDP unit's AllGather and ReduceScatter and the root unit's (:func:`fsdp_unit_parameters`);
    :mod:`distcalc.analyze.fsdp` prices their overlap."""
    layer, root = fsdp_unit_parameters(d, c, ones)
    return [Message(Dim.DP, Comm.ALL_GATHER, layer * o.param_gather_bytes, ones, Phase.FORWARD, True,
                    "FSDP unit AllGather (one block)"),
            Message(Dim.DP, Comm.REDUCE_SCATTER, layer * o.grad_reduce_bytes, ones, Phase.BACKWARD, True,
                    "FSDP unit ReduceScatter (one block)"),
            Message(Dim.DP, Comm.ALL_GATHER, root * o.param_gather_bytes, ones, Phase.FORWARD, True,
                    "FSDP root AllGather (embedding, output layer)"),
            Message(Dim.DP, Comm.REDUCE_SCATTER, root * o.grad_reduce_bytes, ones, Phase.BACKWARD, True,
                    "FSDP root ReduceScatter (embedding, output layer)")]


#: Megatron-Core DDP's default gradient/parameter bucket: max(40e6, 1e6·dp) parameters
#: (``DistributedDataParallelConfig.bucket_size``: "larger DP sizes need larger buckets").
BUCKET_MIN_PARAMETERS = 40e6
BUCKET_PARAMETERS_PER_DP_RANK = 1e6


def bucket_messages(params: np.ndarray, dp_size: np.ndarray, o: AnalyzeOptions, ones: np.ndarray) -> list[Message]:
    """The DP bucket that cannot overlap: the last gradient bucket (the first layers' gradients, ready only
    when the backward pass ends) and the first parameter bucket (needed before the first layer's forward)."""
    bucket = np.minimum(np.maximum(BUCKET_MIN_PARAMETERS, BUCKET_PARAMETERS_PER_DP_RANK * dp_size), params) * ones
    return [Message(Dim.DP, Comm.ALL_REDUCE, bucket * o.grad_reduce_bytes, ones, Phase.BACKWARD, True,
                    "last gradient bucket (AllReduce)"),
            Message(Dim.DP, Comm.REDUCE_SCATTER, bucket * o.grad_reduce_bytes, ones, Phase.BACKWARD, True,
                    "last gradient bucket (ReduceScatter)"),
            Message(Dim.DP, Comm.ALL_GATHER, bucket * o.param_gather_bytes, ones, Phase.FORWARD, True,
                    "first parameter bucket (AllGather)")]


def dp_block(d: ModelDims, cluster: ClusterSpec, c: dict[str, np.ndarray], o: AnalyzeOptions,
             memo: dict | None = None) -> DpTerms:
    """One instance of each DP message and the tied-embedding sync. Routed-expert gradients and parameters
    go over the expert-data-parallel group (:func:`expert_dp_key`) in their own collectives (Megatron-Core
    DDP keeps expert parameters in separate buffers reduced over that group), the rest over the DP group;
    each message's time is the sum of the two. ``c`` carries the stage layer split (:func:`with_stage_layers`)."""
    keys = _keys(c, o)
    shape = c["tp"].shape
    dense, expert = stage_parameter_split(d, c["tp"], c["pp"], c["ep"], stage_layers_of(c))
    params = dense + expert
    ones = np.ones(shape)
    moe = d.expert_parameters_per_layer > 0
    msgs = dp_gradient_messages(dense if moe else params, keys[Dim.DP].size, 0, ones, o.grad_reduce_bytes,
                                o.param_gather_bytes)
    msgs = [Message(m.dim, m.collective, m.size_bytes, ones, m.phase, m.overlappable, m.note) for m in msgs]
    sync = []
    if d.tied_embeddings:
        sync = [Message(Dim.PP, Comm.ALL_REDUCE, d.lm_head_parameters / c["tp"] * o.grad_reduce_bytes,
                        np.where(c["pp"] > 1, 1.0, 0.0), Phase.STEP, note="tied embedding gradients, first + last stage")]
    extra = fsdp_unit_messages(d, c, o, ones) + bucket_messages(params, np.asarray(keys[Dim.DP].size), o, ones)
    priced = message_times(cluster, msgs + sync + extra, keys, shape, memo)  # one pricing pass for all lists
    entries, sync_entries = priced[:len(msgs)], priced[len(msgs):len(msgs) + len(sync)]
    edp = expert_dp_key(keys, c["ep"])
    expert_entries = []
    if moe:
        emsgs = [Message(m.dim, m.collective, m.size_bytes, ones, m.phase, m.overlappable, "expert " + m.note)
                 for m in dp_gradient_messages(expert, edp.size, 0, ones, o.grad_reduce_bytes, o.param_gather_bytes)]
        expert_entries = message_times(cluster, emsgs, {**keys, Dim.DP: edp}, shape)
    # ZeRO-3's gradient reduction (HSDP: + the replicate AllReduce) is a ReduceScatter in every stack
    plain_rs = entries[1][1] + (np.where(np.asarray(edp.size) > 1, expert_entries[1][1], 0.0) if expert_entries else 0.0)
    if o.zero_reduce_to_owners:  # DeepSpeed ZeRO-1/2: one Reduce per partition owner (distcalc.analyze.zero_reduce)
        entries, expert_entries = (owner_reduces(e, group) for e, group in ((entries, keys[Dim.DP].size),
                                                                            (expert_entries, edp.size)))
    # the five DP messages (dp_gradient_messages order), the expert-DP group's collective added where that
    # group has more than one rank
    dp_times = [times for _, times, _ in entries]
    for i, (_, times, _) in enumerate(expert_entries):
        dp_times[i] = dp_times[i] + np.where(np.asarray(edp.size) > 1, times, 0.0)
    grad_ar, grad_rs, ag_step, ag3_f, ag3_b = dp_times
    ag_unit, rs_unit, ag_root, rs_root, bucket_ar, bucket_rs, bucket_ag = (
        times for _, times, _ in priced[len(msgs) + len(sync):])
    dp_group = np.asarray(keys[Dim.DP].size, dtype=float)
    zero_group = dp_group  # ranks ZeRO-3 shards the states over (HSDP: the shard group)
    ar_unit = ar_root = np.zeros(shape)
    grad_rs3 = plain_rs  # ZeRO-3's gradient reduction (HSDP: + the replicate AllReduce)
    unit_params, root_params = fsdp_unit_parameters(d, c, ones)
    if o.fsdp_shard_size:  # HSDP: ZeRO-3 messages on the shard / replicate groups (distcalc.analyze.hsdp)
        h = hsdp_times(cluster, keys, o.fsdp_shard_size, params, unit_params, root_params, o.grad_reduce_bytes,
                       o.param_gather_bytes, ones, memo)
        ag_unit, rs_unit, ag_root, rs_root = (h.unit_gather_s, h.unit_reduce_scatter_s, h.root_gather_s,
                                              h.root_reduce_scatter_s)
        ar_unit, ar_root, zero_group = h.unit_all_reduce_s, h.root_all_reduce_s, h.zero_group_ranks
        grad_rs3, ag3_f, ag3_b = h.zero3_grad_reduce_s, h.zero3_forward_gather_s, h.zero3_backward_gather_s
        # the ZeRO-3 messages' rows: ReduceScatter (+ replicate AllReduce), forward and backward AllGather
        hsdp = {1: (grad_rs3, " + replicate-group AllReduce)"), 3: (ag3_f, ")"), 4: (ag3_b, ")")}
        entries = [(replace(msg, note=f"{msg.note} (HSDP: shard group of {o.fsdp_shard_size}{hsdp[i][1]}"),
                    hsdp[i][0], algos) if i in hsdp else (msg, times, algos)
                   for i, (msg, times, algos) in enumerate(entries)]
    ds = None
    if o.deepspeed_zero3 is not None:  # DeepSpeed's own ZeRO-3 (distcalc.analyze.deepspeed_zero3)
        ds = deepspeed_times(cluster, keys, d, c, o.deepspeed_zero3, unit_params, o.param_gather_bytes,
                             o.grad_reduce_bytes, ones, memo)
        ag_unit, rs_unit = ds.gather_s, ds.reduce_s  # one block's gather and reduce share as DeepSpeed issues them
        frac = ds.regathered  # backward gathers again only what the forward released
        ag3_b = ag3_b * frac
        entries = [(replace(msg, size_bytes=msg.size_bytes * frac, note=msg.note + " (DeepSpeed: released parameters)"),
                    ag3_b, algos) if i == 4 else (msg, times, algos)
                   for i, (msg, times, algos) in enumerate(entries)]
    return DpTerms(
        grad_all_reduce_s=grad_ar, grad_reduce_scatter_s=grad_rs, param_all_gather_s=ag_step,
        zero3_forward_gather_s=ag3_f, zero3_backward_gather_s=ag3_b, fsdp_unit_gather_s=ag_unit,
        fsdp_unit_reduce_scatter_s=rs_unit, fsdp_root_gather_s=ag_root, fsdp_root_reduce_scatter_s=rs_root,
        hsdp_unit_all_reduce_s=ar_unit, hsdp_root_all_reduce_s=ar_root, bucket_all_reduce_s=bucket_ar,
        bucket_reduce_scatter_s=bucket_rs, bucket_all_gather_s=bucket_ag, zero3_grad_reduce_s=grad_rs3,
        dp_group_ranks=dp_group, zero_group_ranks=zero_group, expert_dp_group_ranks=np.asarray(edp.size, dtype=float),
        parameters_per_gpu=np.asarray(params, dtype=float),
        expert_parameters_per_gpu=np.asarray(expert, dtype=float) * ones,
        fsdp_unit_parameters=unit_params, fsdp_root_parameters=root_params,
        embedding_sync_s=total(sync_entries, lambda x: True) if sync_entries else np.zeros(shape),
        deepspeed=ds, messages=entries, expert_messages=expert_entries, sync_messages=sync_entries)
