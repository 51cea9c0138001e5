"""The step-time model, vectorised: :func:`evaluate_batch` evaluates many configurations with NumPy.

Step of one data-parallel replica, seen from its slowest pipeline stage (symbols: m micro-batches, p
stages, v chunks, L_s = L/p layers per stage):

* per layer and micro-batch: compute forward ``t_f`` and backward ``t_b`` (+ recomputation) from
  :mod:`distcalc.compute`; TP collectives (:func:`distcalc.traffic.tp_layer_messages`) on the TP group's
  topology — forward ones and the backward ones on the critical path fully exposed, the overlappable
  backward ones exposed except ``tp_overlap_efficiency`` × the backward GEMM time; CP ring K/V exchange
  exposed beyond the attention compute it overlaps, that attention slowed by ``overlap_compute_slowdown``
  while it overlaps (Ulysses AllToAll fully exposed); EP AllToAll
  (dispatch + combine) fully exposed;
* per stage and micro-batch: ``L_s × layer`` + the embedding (first stage) / output layer and loss (last
  stage) with their TP collectives + blocking pipeline Send/Recv of v chunk boundaries each way;
* pipeline: :func:`distcalc.pipeline.pipeline_time_s` (``m·t_max + (p−1)/v·t_mean``; ZB-H1 variant);
* after the pipeline: DP gradient reduction and parameter gathering (:func:`distcalc.traffic.dp_gradient_messages`)
  exposed beyond the backward (or forward) of one micro-batch when overlapped, at least the bucket that
  cannot overlap (the last gradient bucket, the first parameter bucket: Megatron-Core's max(40e6, 1e6·dp)
  parameters, :func:`distcalc.analyze.blocks.bucket_messages`), plus
  ``overlap_compute_slowdown`` × the compute they overlap (NCCL kernels take SMs); ZeRO-3/FSDP per unit
  (:mod:`distcalc.analyze.fsdp`: first gather and last reduce-scatters exposed, a block's excess where its
  collectives outlast its compute, the same slowdown); tied-embedding gradient
  AllReduce between the first and last stage (p > 1), and the optimizer step, memory-bound:
  ``P_opt · bytes_per_parameter / (B_HBM·η_mem)``.

``step_time = pipeline + dp_exposed + embedding_sync + optimizer``. Every compute time (kernels and the
optimizer step) is that of the slowest of the step's N = tp·pp·dp·cp GPUs, ``1 + σ·E[max of N standard
normals]`` times a median GPU's (:mod:`distcalc.variability`, ``options.gpu_speed_cv``). MFU/HFU: :mod:`distcalc.compute.flops`.

Evaluation order (speed only; the results are the same float64 operations in the same order): every
term that depends only on :data:`UNION_KEY` (micro-batch shape, degrees, recompute, SP, flash) is computed
once per distinct value of that key (:func:`union_terms`: a :class:`~distcalc.analyze.terms.UnionTerms` record,
per stage position :class:`~distcalc.analyze.terms.ByStage`, per DP collective
:class:`~distcalc.analyze.terms.DpCollectives`) and gathered with :func:`distcalc.analyze.gather.gather`; terms that also
depend on the ZeRO stage or on which end stage is slowest are tabulated per (key, stage) and gathered
with a combined index; what depends on the schedule, vpp or micro-batch count is elementwise.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from distcalc.analyze.block_rows import key_table, run_block
from distcalc.analyze.blocks import (BOUNDARY_KEY, DP_KEY, MICRO_KEY, boundary_block, dp_block, micro_batch_block,
                                     stage_moe_layers, with_stage_layers)
from distcalc.analyze.chained_optimizer import step_param_gather_passes
from distcalc.analyze.comm import with_calibration
from distcalc.analyze.executed import ExecutedTerms, executed_mask, executed_pipeline_s
from distcalc.analyze.collective_models import priced_cluster
from distcalc.analyze.deepspeed_zero3 import deepspeed_step_exposure
from distcalc.analyze.fsdp import fsdp_copy_s, fsdp_exposure, fsdp_flat_grad_copy_s
from distcalc.analyze.dp_tables import by_zero_stage, dp_sum, dp_tables
from distcalc.analyze.options import AnalyzeOptions, ElementwiseKernels, FsdpSharding
from distcalc.analyze.gather import UnionRows, gather, take_rows
from distcalc.analyze.torch_cp import check_torch_cp
from distcalc.analyze.message_rows import message_rows
from distcalc.analyze.terms import ByStage, DpCollectives, StagePosition, UnionTerms, dp_collectives_of
from distcalc.calibration import calibrated_device
from distcalc.cluster import ClusterSpec
from distcalc.compute import DeviceCompute, ModelDims
from distcalc.compute.attention import attention_kernel_device
from distcalc.compute.device import main_grad_device
from distcalc.compute.flops import forward_flops_per_token, recompute_flops_per_token
from distcalc.errors import ConfigError
from distcalc.parallel import Schedule, pipeline_slots_offset, stage_layer_split
from distcalc.parallel_batch import BATCH_FIELDS, normalise_batch
from distcalc.pipeline import p2p_transfers_per_micro_batch, pipeline_time_s
from distcalc.traffic import dp_gradient_messages

#: Fields the per-configuration terms of :func:`union_terms` depend on (every block key; the derived
#: ``gpus`` = tp·pp·dp·cp and ``pp_on`` = pp > 1 follow from them).
_MIDDLE = int(StagePosition.MIDDLE)  # a plain int: NumPy converts an IntEnum member the slow way

UNION_KEY = tuple(k for k in dict.fromkeys(MICRO_KEY + BOUNDARY_KEY + DP_KEY) if k in BATCH_FIELDS)


def union_terms(d: ModelDims, device: DeviceCompute, cluster: ClusterSpec, u: dict[str, np.ndarray],
                o: AnalyzeOptions) -> UnionTerms:
    """Every term of the step time that depends only on :data:`UNION_KEY` (not on the schedule, vpp,
    ZeRO stage or number of micro-batches), for the distinct rows ``u`` of that key (1-d arrays)."""
    shape = u["tp"].shape
    u = {**u, "pp_on": (u["pp"] > 1).astype(np.int64), "gpus": u["tp"] * u["pp"] * u["dp"] * u["cp"]}
    memo: dict = {}  # group placements, built once for this evaluation
    pp = u["pp"]
    # layers per stage, once for every block: L/pp, or with the embedding and the loss taking a slot each
    # (L + 2)/pp in the middle stages and one fewer on the first and the last (distcalc.parallel.stage_layer_count)
    # (stage_layer_split; uneven ends: --first/--last-stage-layers, the rest shared by the other stages)
    split = stage_layer_split(d.layers, pp, u["account_for_embedding_and_loss"], u["first_stage_layers"],
                              u["last_stage_layers"])
    lps_first, lps_mid, lps_last = split
    layers = ByStage(lps_first, lps_mid, lps_last)
    mb = run_block(lambda sub: micro_batch_block(d, device, cluster, sub, o, memo), MICRO_KEY, u, shape)
    bd = run_block(lambda sub: boundary_block(d, cluster, sub, o, memo, activation_bytes=device.activation_bytes), BOUNDARY_KEY, u, shape)
    dpb = run_block(lambda sub: dp_block(d, cluster, sub, o, memo), DP_KEY, with_stage_layers(u, split), shape)
    lps = d.layers / pp
    layer_comm = mb.tp_forward_s + mb.tp_backward_s + mb.tp_overlappable_exposed_s + mb.cp_exposed_s + mb.ep_all_s
    layer_forward = mb.forward_s + mb.tp_forward_s + mb.cp_forward_s + mb.ep_forward_s
    layer_backward = mb.backward_s + mb.recompute_s + layer_comm - (mb.tp_forward_s + mb.cp_forward_s + mb.ep_forward_s)
    layer_compute = mb.forward_s + mb.backward_s
    per_layer = layer_compute + mb.recompute_s + layer_comm
    first = mb.embedding_forward_s + mb.embedding_backward_s + mb.embedding_tp_s
    last = mb.output_forward_s + mb.output_backward_s + mb.output_tp_s
    single = pp == 1
    emb, out = mb.embedding_forward_s + mb.embedding_backward_s, mb.output_forward_s + mb.output_backward_s
    # a stage holding more MoE layers than the model's average share pays each one's extra compute and its EP
    # AllToAll (DeepSeek's dense layers sit on the first stage; blocks.stage_moe_layers)
    moe = ByStage(*stage_moe_layers(d, lps_first, lps_mid, lps_last))
    frac = d.moe_layers / d.layers
    extra = ByStage(*((n - lps_x * frac) * mb.moe_extra_compute_s for n, lps_x in
                      ((moe.first, lps_first), (moe.middle, lps_mid), (moe.last, lps_last))))
    ep = ByStage(*(n * mb.ep_per_moe_layer_s for n in (moe.first, moe.middle, moe.last)))
    per_layer_no_ep = per_layer - mb.ep_all_s
    base = ByStage(lps_first * per_layer_no_ep + ep.first + extra.first + first + np.where(single, last, 0.0),
                   np.where(pp >= 3, lps_mid * per_layer_no_ep + ep.middle + extra.middle, 0.0),
                   lps_last * per_layer_no_ep + ep.last + extra.last + last + np.where(single, first, 0.0))
    # the slowest stage: the last, the first (ties), a middle one (only when it holds more layers)
    slowest = np.where(base.middle > np.maximum(base.first, base.last), _MIDDLE,
                       (base.first >= base.last).astype(np.int64))  # 1 = StagePosition.FIRST, 0 = LAST
    tp_layer = mb.tp_forward_s + mb.tp_backward_s + mb.tp_overlappable_exposed_s
    head_tp = ByStage(mb.embedding_tp_s + np.where(single, mb.output_tp_s, 0.0), 0.0,
                      mb.output_tp_s + np.where(single, mb.embedding_tp_s, 0.0))
    # DP messages exposed beyond their overlap window (one micro-batch's backward / forward of the stage)
    t_mb_f = lps_mid * mb.forward_s
    t_mb_b = lps_mid * (mb.backward_s + mb.recompute_s)
    # the step's parameter AllGather, repeated per pass of Megatron's chained optimizer
    t = dp_collectives_of(dpb, step_param_gather_passes(o.distributed_optimizer, o.overlap_param_gather,
                                                        d.moe_layers > 0))
    rs3 = dpb.zero3_grad_reduce_s  # ZeRO-3's gradient reduction (HSDP: shard-group ReduceScatter + replicate AllReduce)
    # overlapped: the excess over the window is exposed, and the compute it overlaps runs
    # overlap_compute_slowdown slower meanwhile (NCCL kernels take SMs and HBM bandwidth; analyze.fsdp); the
    # bucket that cannot overlap (last gradient bucket, first parameter bucket) is exposed in any case
    kappa = o.overlap_compute_slowdown

    def hidden(x: np.ndarray, window: np.ndarray, bucket: np.ndarray) -> np.ndarray:
        tail = np.minimum(x, bucket)
        return np.maximum(x - window, tail) + kappa * np.minimum(x - tail, window)

    if o.overlap_grad_reduce:
        grad_ar_e = hidden(t.grad_all_reduce_s, t_mb_b, dpb.bucket_all_reduce_s)
        grad_rs_e = hidden(t.grad_reduce_scatter_s, t_mb_b, dpb.bucket_reduce_scatter_s)
        z3_forward = np.maximum(t.zero3_forward_gather_s - t_mb_f, 0.0)
        z3_backward_gather = np.maximum(t.zero3_backward_gather_s - t_mb_b, 0.0)
    else:
        grad_ar_e, grad_rs_e = t.grad_all_reduce_s, t.grad_reduce_scatter_s
        z3_forward, z3_backward_gather = t.zero3_forward_gather_s, t.zero3_backward_gather_s
    param_ag_e = (hidden(t.param_all_gather_s, t_mb_f, dpb.bucket_all_gather_s) if o.overlap_param_gather
                  else t.param_all_gather_s)
    # ZeRO-3 / FSDP: per-unit AllGather and ReduceScatter overlapped with the neighbouring block's compute,
    # the first gather and the last reduce-scatter exposed, and the compute slowed while collectives run
    # beside it (distcalc.analyze.fsdp)
    ds = o.deepspeed_zero3
    if ds is not None:  # DeepSpeed's ZeRO-3: its prefetch, release and bucket policy (analyze.deepspeed_zero3)
        z3_forward, z3_backward = deepspeed_step_exposure(lps_mid, mb, dpb, ds, o.overlap_compute_slowdown,
                                                         o.param_gather_bytes, device)
    elif o.overlap_grad_reduce:
        fsdp = fsdp_exposure(lps_mid, mb.forward_s, mb.backward_s + mb.recompute_s, dpb.fsdp_unit_gather_s,
                             dpb.fsdp_unit_reduce_scatter_s, dpb.fsdp_root_gather_s, dpb.fsdp_root_reduce_scatter_s,
                             o.overlap_compute_slowdown, dpb.hsdp_unit_all_reduce_s, dpb.hsdp_root_all_reduce_s)
        z3_forward = np.minimum(fsdp.forward_s, t.zero3_forward_gather_s + o.overlap_compute_slowdown * t_mb_f)
        z3_backward = np.minimum(fsdp.backward_s, rs3 + t.zero3_backward_gather_s + o.overlap_compute_slowdown * t_mb_b)
    else:
        z3_backward = rs3 + t.zero3_backward_gather_s
    if ds is None and o.fsdp_sharding is FsdpSharding.PER_PARAMETER:  # FSDP2's copy-out / copy-in kernels (analyze.fsdp)
        copy_f, copy_b = fsdp_copy_s(lps_mid, dpb.fsdp_unit_parameters, dpb.fsdp_root_parameters, o.param_gather_bytes,
                                     o.grad_reduce_bytes, device.memory_bandwidth_bytes_per_s, device.kernel_overhead_s)
        z3_forward = z3_forward + mb.slowest_gpu_factor * copy_f
        z3_backward = z3_backward + mb.slowest_gpu_factor * copy_b
    elif ds is None and o.fsdp_sharding is FsdpSharding.FLAT_PARAMETER:  # FSDP1: the flat gradient's concatenation (analyze.fsdp)
        z3_backward = z3_backward + mb.slowest_gpu_factor * fsdp_flat_grad_copy_s(
            lps_mid, dpb.fsdp_unit_parameters, dpb.fsdp_root_parameters, o.param_gather_bytes,
            device.memory_bandwidth_bytes_per_s, device.kernel_overhead_s)
    e = DpCollectives(grad_ar_e, grad_rs_e, param_ag_e, z3_forward, z3_backward_gather)
    params_gpu = dpb.parameters_per_gpu
    # sharded (distributed optimizer / ZeRO): the routed experts' states over the expert-DP group, the rest
    # over the DP group (Megatron-Core shards each buffer over the group that reduces it)
    expert_gpu = dpb.expert_parameters_per_gpu
    # the gradient buffer zeroed each step: the whole local one without ZeRO and under ZeRO-1 / Megatron's
    # distributed optimizer (gradients unsharded), the shard under ZeRO-2/3 and FSDP (gradients sharded)
    # Megatron-Core's passes over the local gradient buffer before the DP collective: the NaN check, and the
    # 1/(DP·CP) scaling where that group has more than one rank (AnalyzeOptions)
    grad_pass = o.grad_check_bytes_per_parameter + np.where(dpb.dp_group_ranks > 1, o.grad_prescale_bytes_per_parameter,
                                                            0.0)
    opt = lambda params, grads: mb.slowest_gpu_factor * (  # noqa: E731
        (params * o.optimizer_bytes_per_parameter + grads * (o.grad_buffer_zero_bytes_per_parameter + grad_pass))
        / device.memory_bandwidth_bytes_per_s + 20 * device.kernel_overhead_s)
    shard_gpu = (params_gpu - expert_gpu) / dpb.dp_group_ranks + expert_gpu / dpb.expert_dp_group_ranks
    # HSDP: 1/k
    shard3_gpu = (params_gpu - expert_gpu) / dpb.zero_group_ranks + expert_gpu / dpb.expert_dp_group_ranks
    # gradient accumulation outside the backward kernels (DeepSpeed BF16_Optimizer), once per micro-batch
    acc_bytes = o.grad_accumulation_bytes_per_parameter
    accumulate = mb.slowest_gpu_factor * (params_gpu * acc_bytes / device.memory_bandwidth_bytes_per_s
                                             + (20 * device.kernel_overhead_s if acc_bytes else 0.0))
    s = u["seq_len"]
    return UnionTerms(
        micro_batch=mb, boundary=bd, dp=dpb, layers=layers, slowest=slowest, slowest_stage_s=base.choose(slowest),
        mean_stage_s=lps * per_layer + (first + last) / pp, stage_weight_grad_s=lps_mid * mb.backward_wgrad_s,
        p2p_transfer_s=bd.p2p_transfer_s, dp_active=np.where(dpb.dp_group_ranks > 1, 1.0, 0.0),
        dp_on_link=t, dp_exposed=e, zero3_backward_exposed_s=z3_backward, zero3_grad_reduce_s=rs3,
        optimizer_replicated_s=opt(params_gpu, params_gpu), optimizer_zero1_s=opt(shard_gpu, params_gpu),
        optimizer_sharded_s=opt(shard_gpu, shard_gpu), optimizer_zero3_s=opt(shard3_gpu, shard3_gpu),
        grad_accumulate_s=accumulate, embedding_sync_s=dpb.embedding_sync_s, parameters_per_gpu=params_gpu,
        gpus=u["gpus"], slowest_gpu_factor=mb.slowest_gpu_factor,
        # compute / TP time of each stage position (the slowest one's is the breakdown's)
        compute_s=ByStage(lps_first * layer_compute + extra.first + (emb + np.where(single, out, 0.0)),
                          lps_mid * layer_compute + extra.middle,
                          lps_last * layer_compute + extra.last + (out + np.where(single, emb, 0.0))),
        ep_exposed_s=ep,
        tp_exposed_s=ByStage(lps_first * tp_layer + head_tp.first, lps_mid * tp_layer,
                             lps_last * tp_layer + head_tp.last),
        tp_on_link_s=ByStage(lps_first * mb.tp_on_link_s + head_tp.first, lps_mid * mb.tp_on_link_s,
                             lps_last * mb.tp_on_link_s + head_tp.last),
        recompute_s=mb.recompute_s, cp_exposed_s=mb.cp_exposed_s, ep_all_s=mb.ep_all_s,
        layer_forward_s=layer_forward, layer_backward_s=layer_backward,
        stage_forward_s=lps_mid * layer_forward, stage_backward_s=lps_mid * layer_backward,
        flops_per_token=forward_flops_per_token(d, s) + 0.0 * s,
        extra_flops_per_token=recompute_flops_per_token(d, s, u["recompute"], u["flash_attention"]))

def gemm_fit_applies(calibration: Any, device: DeviceCompute) -> bool:
    """Whether the calibration's GEMM fit was made on ``device`` (same preset name): the fitted η_core,
    η_mem and t₀ belong to the constants of the device they were fitted on (a CPU fit, η relative to the
    CPU's best throughput, says nothing about an H100), so a fit made elsewhere is not applied."""
    return bool(calibration.compute) and calibration.compute.get("device") == device.name


def evaluate(spec_dims: ModelDims, device: DeviceCompute, cluster: ClusterSpec, batch: dict[str, Any],
             options: AnalyzeOptions | None = None, details: bool = False, breakdown: bool = True) -> dict[str, Any]:
    """Core of :func:`distcalc.analyze.evaluate_batch` (see the module docstring). With ``details`` the
    result also holds ``messages``: per-message records of configuration 0 for reports. ``breakdown`` False:
    ``step_time_s`` and ``mfu`` alone (the search), by the same operations, the other keys not computed.

    The terms that depend only on :data:`UNION_KEY` are computed once per distinct value of that key
    (:func:`union_terms`) and gathered (per ZeRO stage, or per slowest end stage, where they differ);
    the rest is elementwise over the batch, in place where a temporary is not needed. With
    ``options.calibration`` the device takes the calibrated GEMM efficiency and the collectives the
    calibrated α and B (:mod:`distcalc.analyze.comm`)."""
    o = options or AnalyzeOptions()
    if o.collective_model == "nccl":
        if o.calibration is not None:
            raise ConfigError("--collective-model nccl and --calibration both replace the collective prices: "
                              "choose one")
        cluster = priced_cluster(o.collective_model, cluster)
    if o.calibration is not None:
        device = calibrated_device(device, o.calibration) if gemm_fit_applies(o.calibration, device) else device
        cluster = with_calibration(cluster, o.calibration)
    if o.elementwise_kernels is ElementwiseKernels.EAGER:
        device = replace(device, eager_elementwise=True)
    if o.elementwise_kernels is ElementwiseKernels.MEGATRON_LOCAL:
        device = replace(device, unfused_linear_bias=True)
    device = main_grad_device(device, o.main_grad_dtype)
    device = attention_kernel_device(device, o.attention_kernel)
    d = spec_dims
    c = normalise_batch(batch)
    check_torch_cp(o.cp_algorithm, c["cp"], c["flash_attention"])
    shape = c["tp"].shape
    flat = {k: v.reshape(-1) for k, v in c.items()}
    rows, inverse = key_table({k: flat[k] for k in UNION_KEY})
    u = union_terms(d, device, cluster, rows, o)
    r = gather(u, inverse)  # the union terms at every configuration's union row

    g = partial(take_rows, index=inverse)  # union row -> every configuration

    b, dp, pp, v, sch = (flat[k] for k in ("micro_batch", "dp", "pp", "vpp", "schedule"))
    m = np.maximum(flat["global_batch"] // (b * dp), 1)
    mf = m.astype(float)
    zero = np.maximum(flat["zero"], 1 if o.distributed_optimizer else 0)

    # --- pipeline: stage times per micro-batch (+ P2P on the critical path), schedule -------------------
    transfers = p2p_transfers_per_micro_batch(sch, pp, v)
    p2p = transfers * r.p2p_transfer_s
    p2p_exposed = 0.0 * p2p if o.pipeline_p2p_overlap else p2p
    stage_max = r.slowest_stage_s
    stage_max += p2p_exposed
    stage_mean = r.mean_stage_s
    stage_mean += p2p_exposed
    m_stage_max = mf * stage_max
    uneven = (flat["first_stage_layers"] > 0) | (flat["last_stage_layers"] > 0)
    executed = executed_mask(sch, uneven)
    run = busiest = None
    if executed.any():  # ZB-H2, ZB-V, DualPipe(V), uneven interleaved: run the schedule's plan with these times
        mbu = u.micro_batch
        lps_mid = r.layers.middle
        terms = ExecutedTerms(
            middle_stage_layers=lps_mid,
            embedding_loss_slot_layers=pipeline_slots_offset(flat["account_for_embedding_and_loss"], pp),
            first_stage_extra_layers=np.where(uneven, r.layers.first - lps_mid, 0.0),
            last_stage_extra_layers=np.where(uneven, r.layers.last - lps_mid, 0.0),
            layer_forward_s=r.layer_forward_s, layer_backward_s=r.layer_backward_s,
            layer_wgrad_s=UnionRows(mbu.backward_wgrad_s, inverse),
            layer_ep_forward_s=UnionRows(mbu.ep_forward_s, inverse), layer_ep_all_s=UnionRows(mbu.ep_all_s, inverse),
            embedding_forward_s=UnionRows(mbu.embedding_forward_s, inverse),
            embedding_backward_s=UnionRows(mbu.embedding_backward_s, inverse),
            embedding_tp_s=UnionRows(mbu.embedding_tp_s, inverse),
            output_forward_s=UnionRows(mbu.output_forward_s, inverse),
            output_backward_s=UnionRows(mbu.output_backward_s, inverse),
            output_wgrad_s=UnionRows(mbu.output_wgrad_s, inverse), output_tp_s=UnionRows(mbu.output_tp_s, inverse),
            # a chunk sends one of its boundary's messages:
            p2p_exposed_s=np.broadcast_to(p2p_exposed / np.maximum(transfers, 1.0), pp.shape),
            p2p_latency_s=r.p2p_transfer_s * (1.0 if o.pipeline_p2p_overlap else 0.0))
        run, busiest = executed_pipeline_s(sch, pp, m, terms, np.where(sch == Schedule.INTERLEAVED.code, v, 1), uneven,
                                           busy=breakdown)

    # --- data parallel (counts per step as traffic.dp_gradient_messages), optimizer -------------------
    by_zero = inverse * 4 + zero
    gz = partial(take_rows, index=by_zero)
    any_ge2, any_z3 = bool((zero >= 2).any()), bool((zero == 3).any())
    on = u.dp_active
    ar = o.allreduce_sharded_gradients
    dp_on_link = (dp_sum(dp_tables(u.dp_on_link, on, allreduce_sharded=ar, rs3=u.zero3_grad_reduce_s), gz, mf,
                         any_ge2, any_z3) if breakdown else None)
    dp_exposed = dp_sum(dp_tables(u.dp_exposed, on, u.zero3_backward_exposed_s, ar), gz, mf, any_ge2, any_z3)
    optimizer = gz(by_zero_stage(u.optimizer_replicated_s, u.optimizer_zero1_s, u.optimizer_sharded_s,
                                 u.optimizer_zero3_s).ravel())
    if o.grad_accumulation_bytes_per_parameter:
        optimizer = optimizer + mf * r.grad_accumulate_s
    embedding_sync = r.embedding_sync_s
    # the pipeline's closed form (ZB-H1: the weight-gradient passes fill the bubble), once, at the end; the
    # executed schedules' run replaces it where they apply
    weight = r.stage_weight_grad_s if (sch == Schedule.ZERO_BUBBLE.code).any() else 0.0
    pipeline = pipeline_time_s(sch, pp, mf, v, stage_max, stage_mean, weight)
    if run is not None:
        pipeline = np.where(executed, run, pipeline)
    step = pipeline + dp_exposed
    step += embedding_sync
    step += optimizer

    gpus = r.gpus
    tokens = flat["global_batch"] * flat["seq_len"]
    mflops = 3.0 * tokens
    mflops *= r.flops_per_token
    if not breakdown:
        step_gpus_peak = step * gpus
        step_gpus_peak *= device.peak_flops_per_s
        return {"step_time_s": step.reshape(shape), "mfu": (mflops / step_gpus_peak).reshape(shape)}
    hflops = tokens * r.extra_flops_per_token
    np.add(mflops, hflops, out=hflops)
    pick = lambda terms: g(terms.choose(u.slowest))  # noqa: E731  (the slowest stage's term)
    lps_slowest = pick(u.layers)
    m_lps = mf * lps_slowest
    step_gpus_peak = step * gpus
    step_gpus_peak *= device.peak_flops_per_s
    result = {
        "step_time_s": step,
        "mfu": mflops / step_gpus_peak,
        "hfu": np.divide(hflops, step_gpus_peak, out=step_gpus_peak),
        "tokens_per_s": tokens / step,
        "model_flops": mflops, "hardware_flops": hflops,
        "compute_s": mf * pick(u.compute_s),
        "recompute_s": m_lps * r.recompute_s,
        "tp_exposed_s": mf * pick(u.tp_exposed_s),
        "cp_exposed_s": m_lps * r.cp_exposed_s if u.cp_exposed_s.any() else np.zeros(m.shape),
        "ep_exposed_s": mf * pick(u.ep_exposed_s) if u.ep_all_s.any() else np.zeros(m.shape),
        "pp_p2p_s": mf * p2p_exposed,
        "bubble_s": pipeline - m_stage_max,
        "dp_exposed_s": dp_exposed, "dp_on_link_s": dp_on_link,
        "embedding_sync_s": embedding_sync, "optimizer_s": optimizer,
        "tp_on_link_s": mf * pick(u.tp_on_link_s),
        "micro_batches": m, "gpus": gpus, "parameters_per_gpu": r.parameters_per_gpu,
        "slowest_gpu_factor": r.slowest_gpu_factor,
        "layer_forward_s": r.layer_forward_s, "layer_backward_s": r.layer_backward_s,
        "stage_forward_s": r.stage_forward_s, "stage_backward_s": r.stage_backward_s,
        "stage_weight_s": r.stage_weight_grad_s, "p2p_transfer_s": r.p2p_transfer_s,
        # one unit (overlaps report)
        "fsdp_ag_unit_s": g(u.dp.fsdp_unit_gather_s), "fsdp_rs_unit_s": g(u.dp.fsdp_unit_reduce_scatter_s),
        "fsdp_ar_unit_s": g(u.dp.hsdp_unit_all_reduce_s),
        "ds_kept_blocks": g(u.dp.deepspeed.kept_units if u.dp.deepspeed is not None  # DeepSpeed ZeRO-3 (overlaps)
                            else np.zeros(m.shape)),
        "block_forward_s": g(u.micro_batch.forward_s),
        "block_backward_s": g(u.micro_batch.backward_s + u.micro_batch.recompute_s),
    }
    if executed.any():
        # executed schedules: the per-stage parts describe the busiest device (DualPipe spreads the embedding
        # and the output layer over both ends and hides EP all-to-all in its F&B pairs, so that device can be
        # less loaded than the slowest 1F1B stage): scale them to its busy time; the bubble is its idle time
        scale = np.where(executed, np.divide(busiest, m_stage_max, out=np.ones_like(m_stage_max),
                                             where=executed & (m_stage_max > 0)), 1.0)
        for key in ("compute_s", "recompute_s", "tp_exposed_s", "cp_exposed_s", "ep_exposed_s", "pp_p2p_s"):
            result[key] = np.where(executed, result[key] * scale, result[key])
        result["bubble_s"] = np.where(executed, pipeline - np.where(executed, busiest, 0.0), result["bubble_s"])
    result = {k: x.reshape(shape) for k, x in result.items()}
    if details:
        counts = [np.asarray(msg.count, dtype=float) for msg in
                  dp_gradient_messages(1.0, g(u.dp.dp_group_ranks), zero, m, o.grad_reduce_bytes,
                                       o.param_gather_bytes, int(o.allreduce_sharded_gradients))]
        counts[2] = counts[2] * step_param_gather_passes(o.distributed_optimizer, o.overlap_param_gather,
                                                         d.moe_layers > 0)
        e = r.dp_exposed  # every DP collective but the step's parameter AllGather, exposed
        grad_exposed = (counts[0] * e.grad_all_reduce_s + counts[1] * e.grad_reduce_scatter_s
                        + counts[3] * e.zero3_forward_gather_s + counts[4] * e.zero3_backward_gather_s)
        expert_counts = [np.asarray(msg.count, dtype=float) for msg in
                         dp_gradient_messages(1.0, g(u.dp.expert_dp_group_ranks), zero, m, o.grad_reduce_bytes,
                                              o.param_gather_bytes, int(o.allreduce_sharded_gradients))]
        result["messages"] = message_rows(u.micro_batch, u.boundary, u.dp, counts, m, lps_slowest, transfers, grad_exposed,
                                      dp_exposed - grad_exposed, o, expert_counts)
    return result

