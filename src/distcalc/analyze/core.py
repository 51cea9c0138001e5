"""The step-time model, vectorised: :func:`evaluate_batch` evaluates many configurations with NumPy.

Step of one data-parallel replica, seen from its slowest pipeline stage (symbols: m micro-batches, p
stages, v chunks, L_s = L/p layers per stage):

* per layer and micro-batch: compute forward ``t_f`` and backward ``t_b`` (+ recomputation) from
  :mod:`distcalc.compute`; TP collectives (:func:`distcalc.traffic.tp_layer_messages`) on the TP group's
  topology — forward ones and the backward ones on the critical path fully exposed, the overlappable
  backward ones exposed except ``tp_overlap_efficiency`` × the backward GEMM time; CP ring K/V exchange
  exposed beyond the attention compute it overlaps (Ulysses AllToAll fully exposed); EP AllToAll
  (dispatch + combine) fully exposed;
* per stage and micro-batch: ``L_s × layer`` + the embedding (first stage) / output layer and loss (last
  stage) with their TP collectives + blocking pipeline Send/Recv of v chunk boundaries each way;
* pipeline: :func:`distcalc.pipeline.pipeline_time_s` (``m·t_max + (p−1)/v·t_mean``; ZB-H1 variant);
* after the pipeline: DP gradient reduction and parameter gathering (:func:`distcalc.traffic.dp_gradient_messages`)
  exposed beyond the backward (or forward) of one micro-batch when overlapped, tied-embedding gradient
  AllReduce between the first and last stage (p > 1), and the optimizer step, memory-bound:
  ``P_opt · bytes_per_parameter / (B_HBM·η_mem)``.

``step_time = pipeline + dp_exposed + embedding_sync + optimizer``. MFU/HFU: :mod:`distcalc.compute.flops`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.analyze.blocks import (BOUNDARY_KEY, DP_KEY, MICRO_KEY, boundary_block, dp_block, micro_batch_block,
                                     run_block)
from distcalc.analyze.options import AnalyzeOptions
from distcalc.cluster import ClusterSpec
from distcalc.compute import DeviceCompute, ModelDims, hardware_flops_per_step, model_flops_per_step
from distcalc.pipeline import p2p_transfers_per_micro_batch, pipeline_time_s
from distcalc.traffic import Dim, Phase, dp_gradient_messages

#: Batch fields (NumPy arrays or scalars, broadcast together) and their defaults.
BATCH_FIELDS: dict[str, Any] = {
    "tp": 1, "pp": 1, "dp": 1, "cp": 1, "ep": 1, "vpp": 1, "micro_batch": 1, "global_batch": None,
    "zero": 0, "recompute": 0, "sequence_parallel": 0, "schedule": 1, "flash_attention": 1, "seq_len": 2048,
}


def normalise_batch(batch: dict[str, Any]) -> dict[str, np.ndarray]:
    """Broadcast the batch fields to one shape (int64 arrays); ``global_batch`` defaults to
    ``micro_batch·dp`` (one micro-batch per replica)."""
    unknown = set(batch) - set(BATCH_FIELDS)
    if unknown:
        raise KeyError(f"unknown batch fields {sorted(unknown)}; valid: {', '.join(BATCH_FIELDS)}")
    values = {k: batch.get(k, default) for k, default in BATCH_FIELDS.items()}
    if values["global_batch"] is None:
        values["global_batch"] = np.multiply(values["micro_batch"], values["dp"])
    arrays = np.broadcast_arrays(*[np.asarray(v, dtype=np.int64) for v in values.values()])
    return {k: np.array(a) for k, a in zip(values, arrays)}


def evaluate(spec_dims: ModelDims, device: DeviceCompute, cluster: ClusterSpec, batch: dict[str, Any],
             options: AnalyzeOptions | None = None, details: bool = False) -> dict[str, Any]:
    """Core of :func:`distcalc.analyze.evaluate_batch` (see the module docstring). With ``details`` the
    result also holds ``messages``: per-message records of configuration 0 for reports."""
    o = options or AnalyzeOptions()
    d = spec_dims
    c = normalise_batch(batch)
    shape = c["tp"].shape
    tp, pp, dp, cp, v = (c[k] for k in ("tp", "pp", "dp", "cp", "vpp"))
    b, s, rc, sch = c["micro_batch"], c["seq_len"], c["recompute"], c["schedule"]
    m = np.maximum(c["global_batch"] // (b * dp), 1)
    zero = np.maximum(c["zero"], 1 if o.distributed_optimizer else 0)
    c["pp_on"] = (pp > 1).astype(np.int64)
    layers_per_stage = d.layers / pp

    mb = run_block(lambda sub: micro_batch_block(d, device, cluster, sub, o), MICRO_KEY, c, shape)
    bd = run_block(lambda sub: boundary_block(d, cluster, sub, o), BOUNDARY_KEY, c, shape)
    dpb = run_block(lambda sub: dp_block(d, cluster, sub, o), DP_KEY, c, shape)

    layer_comm = mb["tp_fwd"] + mb["tp_bwd"] + mb["tp_ov_exposed"] + mb["cp_all"] + mb["ep_all"]
    layer_forward = mb["forward_s"] + mb["tp_fwd"] + mb["cp_f"] + mb["ep_f"]
    layer_backward = mb["backward_s"] + mb["recompute_s"] + layer_comm - (mb["tp_fwd"] + mb["cp_f"] + mb["ep_f"])
    transfers = p2p_transfers_per_micro_batch(sch, pp, v)
    p2p = transfers * bd["p2p_transfer"]
    p2p_exposed = 0.0 * p2p if o.pipeline_p2p_overlap else p2p

    layer_compute = mb["forward_s"] + mb["backward_s"]
    body = layers_per_stage * (layer_compute + mb["recompute_s"] + layer_comm)
    first = mb["emb_f"] + mb["emb_b"] + mb["emb_comm"]
    last = mb["out_f"] + mb["out_b"] + mb["head_comm"]
    single = pp == 1
    stage_first = body + first + np.where(single, last, 0.0) + p2p_exposed
    stage_last = body + last + np.where(single, first, 0.0) + p2p_exposed
    stage_max = np.maximum(stage_first, stage_last)
    stage_mean = body + (first + last) / pp + p2p_exposed
    weight = layers_per_stage * mb["backward_wgrad_s"]
    pipeline = pipeline_time_s(sch, pp, m, v, stage_max, stage_mean, weight)

    # --- data parallel (counts per step from traffic.dp_gradient_messages), optimizer -------------------
    counts = [np.asarray(msg.count, dtype=float) for msg in
              dp_gradient_messages(1.0, dpb["dp_group"], zero, m, o.grad_reduce_bytes, o.param_gather_bytes)]
    times = [dpb[k] for k in ("grad_ar", "grad_rs", "ag_step", "ag3_f", "ag3_b")]
    dp_on_link = sum(cnt * t for cnt, t in zip(counts, times))
    t_mb_f = layers_per_stage * mb["forward_s"]
    t_mb_b = layers_per_stage * (mb["backward_s"] + mb["recompute_s"])
    windows = (t_mb_b, t_mb_b, t_mb_f, t_mb_f, t_mb_b)
    if o.overlap_grad_reduce:
        grad_exposed = sum(counts[i] * np.maximum(times[i] - windows[i], 0.0) for i in (0, 1, 3, 4))
    else:
        grad_exposed = sum(counts[i] * times[i] for i in (0, 1, 3, 4))
    ag_exposed = counts[2] * (np.maximum(times[2] - t_mb_f, 0.0) if o.overlap_param_gather else times[2])
    dp_exposed = grad_exposed + ag_exposed
    embedding_sync = dpb["embedding_sync"]
    params_gpu = dpb["params_gpu"]
    shard = np.where(zero >= 1, dpb["dp_group"], 1.0)
    optimizer = (params_gpu / shard * o.optimizer_bytes_per_parameter / device.memory_bandwidth_bytes_per_s
                 + 20 * device.kernel_overhead_s)

    step = pipeline + dp_exposed + embedding_sync + optimizer
    gpus = tp * pp * dp * cp
    peak = device.peak_flops_per_s
    mflops = model_flops_per_step(d, c["global_batch"], s)
    hflops = hardware_flops_per_step(d, c["global_batch"], s, rc, c["flash_attention"])
    slow_first = stage_first >= stage_last
    emb, out = mb["emb_f"] + mb["emb_b"], mb["out_f"] + mb["out_b"]
    head_compute = np.where(slow_first, emb, out) + np.where(single, np.where(slow_first, out, emb), 0.0)
    head_tp = (np.where(slow_first, mb["emb_comm"], mb["head_comm"])
               + np.where(single, np.where(slow_first, mb["head_comm"], mb["emb_comm"]), 0.0))
    result = {
        "step_time_s": step,
        "mfu": mflops / (step * gpus * peak),
        "hfu": hflops / (step * gpus * peak),
        "tokens_per_s": c["global_batch"] * s / step,
        "model_flops": mflops, "hardware_flops": hflops,
        "compute_s": m * (layers_per_stage * layer_compute + head_compute),
        "recompute_s": m * layers_per_stage * mb["recompute_s"],
        "tp_exposed_s": m * (layers_per_stage * (mb["tp_fwd"] + mb["tp_bwd"] + mb["tp_ov_exposed"]) + head_tp),
        "cp_exposed_s": m * layers_per_stage * mb["cp_all"],
        "ep_exposed_s": m * layers_per_stage * mb["ep_all"],
        "pp_p2p_s": m * p2p_exposed,
        "bubble_s": pipeline - m * stage_max,
        "dp_exposed_s": dp_exposed, "dp_on_link_s": dp_on_link,
        "embedding_sync_s": embedding_sync, "optimizer_s": optimizer,
        "tp_on_link_s": m * (layers_per_stage * mb["tp_on_link"] + head_tp),
        "micro_batches": m, "gpus": gpus, "parameters_per_gpu": params_gpu,
        "layer_forward_s": layer_forward, "layer_backward_s": layer_backward,
        "stage_forward_s": layers_per_stage * layer_forward, "stage_backward_s": layers_per_stage * layer_backward,
    }
    if details:
        result["messages"] = _details(mb, bd, dpb, counts, m, layers_per_stage, transfers, grad_exposed, ag_exposed, o)
    return result


def _details(mb, bd, dpb, counts, m, lps, transfers, grad_exposed, ag_exposed, o) -> list[dict[str, Any]]:
    """Per-message records of configuration 0: count per step, time on the link, exposed time."""
    f = lambda x: float(np.ravel(x)[0])  # noqa: E731
    rows = []
    ov_ratio = f(mb["tp_ov_exposed"]) / f(mb["tp_ov"]) if f(mb["tp_ov"]) > 0 else 0.0
    for msg, times, algos in mb["_entries"]:
        per_layer = msg.dim in (Dim.TP, Dim.CP, Dim.EP) and "embedding" not in msg.note and "logits" not in msg.note
        scope = f(m) * (f(lps) if per_layer else 1.0) * (f(mb["moe_fraction"]) if msg.dim == Dim.EP else 1.0)
        rows.append((msg, f(times), algos, scope, ov_ratio if (msg.dim == Dim.TP and msg.overlappable) else 1.0))
    for msg, times, algos in bd["_entries"]:
        rows.append((msg, f(times), algos, f(m) * f(transfers), 0.0 if o.pipeline_p2p_overlap else 1.0))
    dp_total = sum(f(cnt) * f(t) for cnt, (_, t, _) in zip(counts, dpb["_entries"]))
    dp_ratio = (f(grad_exposed) + f(ag_exposed)) / dp_total if dp_total > 0 else 0.0
    for cnt, (msg, times, algos) in zip(counts, dpb["_entries"]):
        rows.append((msg, f(times), algos, f(cnt), dp_ratio))
    for msg, times, algos in dpb["_sync_entries"]:
        rows.append((msg, f(times), algos, f(msg.count), 1.0))
    out = []
    for msg, time_one, algos, count, exposed_frac in rows:
        base = 1.0 if msg.dim == Dim.DP or msg.phase == Phase.STEP else f(msg.count)
        count = base * count
        if count <= 0 or f(msg.size_bytes) <= 0 or time_one <= 0:
            continue
        used = [a for a in algos if a != "none"]
        out.append({"dim": msg.dim.value, "collective": msg.collective.value, "size_bytes": f(msg.size_bytes),
                    "count": count, "phase": msg.phase.value, "time_s": time_one * count,
                    "exposed_s": time_one * count * exposed_frac, "algorithm": used[0] if used else "none",
                    "note": msg.note})
    return out
