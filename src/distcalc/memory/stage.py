"""Memory of one pipeline stage on one GPU, as plain-number formulas (elementwise on NumPy arrays).

:func:`config_terms` (stage-independent terms) and :func:`stage_lines` (one stage) are the single
implementation used by both :func:`distcalc.memory.memory_report` (one configuration, every stage) and
:func:`distcalc.memory.memory_batch` (arrays of configurations). Model states follow
:func:`distcalc.memory.states.model_state_bytes` (parameters × bytes per parameter / ZeRO divisor).

Layout (Megatron-LM): stage i holds model chunks i, i + pp, …, i + (vpp−1)·pp of L/(pp·vpp) layers each;
the token embedding (and learned positions) sit on stage 0, the final norm and LM head on stage pp−1. With
``account_for_embedding_and_loss`` (Megatron-Core ``--account-for-embedding-in-pipeline-split`` and
``--account-for-loss-in-pipeline-split``; Llama 3, Dubey et al. 2024, arXiv:2407.21783 §3.3.2: "reduce one
Transformer layer each from the first and the last stages") the L + 2 slots are cut into pp·vpp chunks of
(L + 2)/(pp·vpp): the embedding takes the first slot of chunk 0, the loss the last slot of chunk pp·vpp − 1,
so stages 0 and pp−1 hold (L + 2)/pp − 1 layers and the others (L + 2)/pp
(:func:`distcalc.parallel.chunk_layer_range`, :func:`distcalc.parallel.stage_layer_count`). With
tied embeddings and pp > 1 the last stage keeps its own copy of the embedding matrix for the LM head
(Megatron ``shared_embedding_or_output_weight``; gradients all-reduced over the embedding group). Layer
weights split over TP except norms, row-parallel biases and the router (replicated); routed experts split
over EP × TP. Position embeddings are replicated over TP.
"""

from __future__ import annotations

import numpy as np

from distcalc.deepspeed_zero3 import stage_buffer_bytes as deepspeed_stage_buffer_bytes
from distcalc.memory.activations import (
    attention_score_buffer_bytes,
    embedding_activation_bytes,
    in_flight_micro_batches,
    ACTIVATION_BYTES_16,
    layer_activation_bytes,
    output_activation_bytes,
    output_in_flight,
)
from distcalc.model.dims import ModelDims
from distcalc.memory.options import MemoryOptions
from distcalc.memory.states import sharded_state_bytes, zero_divisors
from distcalc.memory.te_dummy_wgrad import dummy_wgrad_bytes
from distcalc.memory.torch_cp import torch_cp_buffer_bytes
from distcalc.software import TORCH_CP_ALGORITHMS, ContextParallelAlgorithm
from distcalc.parallel import Schedule, stage_layout
from distcalc.schedules import PARAMETER_COPIES, V_SHAPED

STAGE_KEYS = (
    "layers", "moe_layers", "parameters", "layer_parameters", "weights_bytes", "gradients_bytes",
    "optimizer_bytes", "model_states_bytes", "layer_model_states_bytes", "in_flight_micro_batches",
    "activations_per_layer_bytes", "layer_activations_bytes", "recompute_workspace_bytes",
    "embedding_activations_bytes", "output_activations_bytes", "loss_workspace_bytes", "attention_buffer_bytes", "activations_bytes",
    "weight_gradient_dummies_bytes",
    "communication_buffers_bytes", "cuda_context_bytes", "allocator_reserve_bytes", "optimizer_step_buffers_bytes",
    "total_bytes",
)


def stage_moe_layers(dims: ModelDims, stage, pp, vpp, split=0, first=0, last=0):
    """MoE layers held by ``stage`` (:func:`distcalc.parallel.stage_layout`): the MoE layers of its vpp chunks
    ``stage + j·pp``, or with uneven ends ``first``/``last`` (vpp 1) of its one range. int64."""
    return stage_layout(dims.layers, dims.moe_cumulative, stage, pp, vpp, split, first, last).moe_layers


def _cp_buffers(dims: ModelDims, options: MemoryOptions, micro_batch, seq_len, tp, cp, activation_bytes):
    """PyTorch ring CP's buffers of one layer (:mod:`distcalc.memory.torch_cp`), ``activation_bytes`` per
    key/value/output element; 0 for the other algorithms."""
    if options.cp_algorithm not in TORCH_CP_ALGORITHMS:
        return 0.0
    return torch_cp_buffer_bytes(dims, micro_batch, seq_len, tp, cp,
                                 options.cp_algorithm == ContextParallelAlgorithm.TORCH_ALLGATHER, activation_bytes)


def config_terms(dims: ModelDims, *, tp, pp, dp, cp, ep, vpp, zero, sequence_parallel, recompute, micro_batch,
                 num_micro_batches, seq_len, schedule, flash, weight_bytes, gradient_bytes, optimizer_bytes,
                 options: MemoryOptions, account_for_embedding_and_loss=0, first_stage_layers=0,
                 last_stage_layers=0, activation_bytes=ACTIVATION_BYTES_16) -> dict[str, object]:
    """The stage-independent terms of a configuration: per-layer parameters and activations, output and
    embedding activations of one micro-batch, ZeRO divisors, and the pipeline-split flag
    ``account_for_embedding_and_loss`` (bool or 0/1 array; see the module docstring). Input of
    :func:`stage_lines`."""
    f = lambda x: np.asarray(x, dtype=float)  # noqa: E731
    tp_f, ep_f = f(tp), f(ep)
    z3 = np.asarray(zero) >= 3
    shard = f(dp) * f(cp)
    if options.zero_shard_size:  # HSDP: ZeRO-3 states sharded within groups of k ranks, replicated across them
        shard = np.where(z3, np.minimum(float(options.zero_shard_size), shard), shard)
    expert_shard = shard / ep_f
    has_moe = dims.moe_cumulative[-1] > 0
    act = dict(seq_len=seq_len, micro_batch=micro_batch, tp=tp, cp=cp, sequence_parallel=sequence_parallel)
    stored_dense, work_dense = layer_activation_bytes(dims, False, recompute=recompute, flash=flash,
                                                      activation_bytes=activation_bytes, **act)
    stored_moe, work_moe = (layer_activation_bytes(dims, True, recompute=recompute, flash=flash,
                                                   moe_token_factor=options.moe_token_factor,
                                                   activation_bytes=activation_bytes, **act)
                            if has_moe else (0.0, 0.0))
    hidden_out, logits, loss = output_activation_bytes(dims, activation_bytes=activation_bytes, **act)
    score_buffer = (np.where(flash, 0.0, attention_score_buffer_bytes(dims, seq_len, micro_batch, tp, cp,
                                                                      activation_bytes))
                    if options.attention_score_buffer else 0.0)  # only a stack that keeps one, only without flash
    per_param = weight_bytes, gradient_bytes, optimizer_bytes
    pp_f, m = f(pp), f(num_micro_batches)
    lm_head = dims.embedding if dims.tied_embeddings else dims.lm_head
    lm_head = np.where(dims.tied_embeddings & (pp_f == 1), 0.0, lm_head)  # tied + one stage: the same matrix
    return dict(
        tp=tp_f, pp=pp_f, vpp=f(vpp), pp_int=pp, vpp_int=vpp, schedule=schedule, m=m,
        split=np.asarray(account_for_embedding_and_loss, dtype=np.int64),
        first=np.asarray(first_stage_layers, dtype=np.int64), last=np.asarray(last_stage_layers, dtype=np.int64),
        embedding_params=dims.embedding / tp_f + dims.position_embedding,  # first stage
        head_params=lm_head / tp_f + dims.final_norm,  # last stage
        output_count=output_in_flight(schedule, m),  # micro-batches of logits on the last stage
        dense_layer=dims.dense_sharded / tp_f + dims.dense_replicated,
        moe_layer=dims.moe_sharded / tp_f + dims.moe_replicated,
        expert_layer=dims.moe_experts / (ep_f * tp_f),
        per_param=per_param, weight_bytes=weight_bytes,
        divisors=zero_divisors(zero, shard), expert_divisors=zero_divisors(zero, expert_shard),
        stored_dense=stored_dense, work_dense=work_dense, stored_moe=stored_moe, work_moe=work_moe,
        embedding_act=embedding_activation_bytes(dims, **act), output_act=hidden_out + logits, loss=loss,
        score_buffer=score_buffer,
        cp_buffers=_cp_buffers(dims, options, micro_batch, seq_len, tp, cp, activation_bytes),
        gather_dense=np.where(z3 & (shard > 1), 1.0, 0.0), gather_expert=np.where(z3 & (expert_shard > 1), 1.0, 0.0),
        options=options,
    )


def stage_layer_terms(dims: ModelDims, terms: dict[str, object], stage) -> dict[str, object]:
    """The lines of :func:`stage_lines` that depend on the stage only through the layers it holds (its
    dense / MoE layer counts): layer parameters and their states, per-layer activations, recompute
    workspace, communication buffers. Stages holding the same layer mix share them (every stage of a
    uniform model without the embedding/loss split; with it stages 0 and pp−1 hold one layer fewer), so
    :func:`distcalc.memory.memory_batch` shares them between its candidate stages.

    ``layers`` = :func:`distcalc.parallel.stage_layer_count`: L/pp, or with the split (L + 2)/pp less one on
    stages 0 and pp−1."""
    t = terms
    options: MemoryOptions = t["options"]  # type: ignore[assignment]
    layers, n_moe = stage_layout(dims.layers, dims.moe_cumulative, stage, t["pp_int"], t["vpp_int"], t["split"],
                                 t["first"], t["last"])
    n_moe = np.asarray(n_moe, dtype=float)
    n_dense = layers - n_moe
    layer_params = n_dense * t["dense_layer"] + n_moe * t["moe_layer"]
    expert_params = n_moe * t["expert_layer"]
    w_l, g_l, o_l = sharded_state_bytes(layer_params, t["per_param"], t["divisors"])
    w_e, g_e, o_e = sharded_state_bytes(expert_params, t["per_param"], t["expert_divisors"])
    stage_layer_acts = n_dense * t["stored_dense"] + n_moe * t["stored_moe"]
    biggest_layer = np.maximum(
        np.where(n_dense > 0, t["dense_layer"] * t["gather_dense"], 0.0),
        np.where(n_moe > 0, t["moe_layer"] * t["gather_dense"] + t["expert_layer"] * t["gather_expert"], 0.0))
    comm = options.comm_buffer_bytes + options.zero3_prefetch_layers * biggest_layer * t["weight_bytes"]
    if options.deepspeed_zero3 is not None:  # DeepSpeed's gathered parameters and buckets instead (ZeRO-3 only)
        comm = options.comm_buffer_bytes + t["gather_dense"] * deepspeed_stage_buffer_bytes(
            dims, options.deepspeed_zero3, layers, layer_params + expert_params, t["embedding_params"],
            t["head_params"], t["tp"], t["weight_bytes"])
    comm = comm + t["cp_buffers"]  # PyTorch ring CP's K,V and FP32 gradient buffers (memory.torch_cp)
    return dict(
        layers=layers, n_moe=n_moe, layer_params=layer_params, expert_params=expert_params,
        states_l=(w_l, g_l, o_l), states_e=(w_e, g_e, o_e), layer_states=w_l + g_l + o_l + w_e + g_e + o_e,
        stage_layer_acts=stage_layer_acts,
        per_layer=stage_layer_acts / np.maximum(layers, 1.0),  # a valid stage holds >= 1 layer
        workspace=np.maximum(np.where(n_dense > 0, t["work_dense"], 0.0), np.where(n_moe > 0, t["work_moe"], 0.0)),
        comm=comm, context=np.full_like(comm, float(options.cuda_context_bytes)),
        dummies=dummy_wgrad_bytes(dims, options.te_dummy_wgrad, n_dense, n_moe, t["tp"].astype(np.int64)),
    )


def stage_lines(dims: ModelDims, terms: dict[str, object], stage,
                layer_terms: dict[str, object] | None = None) -> dict[str, np.ndarray]:
    """Every memory line (bytes, per GPU) of pipeline stage ``stage``; keys :data:`STAGE_KEYS`.

    Model states: per :func:`~distcalc.memory.states.model_state_bytes` with ZeRO over d = dp·cp
    (experts over d/ep). Activations: in-flight units (:func:`in_flight_micro_batches`) / vpp × the stage's
    per-layer activations (:func:`layer_activation_bytes`) summed over its layers (a unit holds the stage's
    average chunk), + one layer's recompute workspace, + embedding dropout mask (stage 0), + output layer,
    logits and fp32 loss workspace (stage pp−1), + the persistent attention-score buffer of a non-flash stack
    that keeps one (:func:`~distcalc.memory.activations.attention_score_buffer_bytes`, ``MemoryOptions``). Transformer
    Engine's cached dummy weight gradients (:mod:`distcalc.memory.te_dummy_wgrad`). Buffers: NCCL buffers, ZeRO-3
    gathered layer(s), PyTorch ring CP's K,V and FP32 gradient buffers (:mod:`distcalc.memory.torch_cp`), CUDA
    context, allocator reserve, the optimizer step's own tensors (:class:`MemoryOptions`).
    ``layer_terms``: :func:`stage_layer_terms` of a stage holding the same layers (computed when not given).

    With the embedding/loss split and vpp > 1 the short chunk (chunk 0 of stage 0, the last chunk of stage
    pp−1, one layer fewer) is averaged in like the others; under the interleaved schedule with m ≥ 2·pp it
    actually holds 2·pp − 1 units on stage 0 and 1 unit on stage pp−1, so the average errs by
    (vpp−1)(pp−1)/vpp layer-micro-batches (over on stage 0, under on stage pp−1)."""
    t = terms
    layer_terms = stage_layer_terms(dims, t, stage) if layer_terms is None else layer_terms
    states = stage_state_lines(t, stage, layer_terms)
    acts = stage_activation_lines(t, stage, layer_terms)
    options: MemoryOptions = t["options"]  # type: ignore[assignment]
    subtotal = (states["weights_bytes"] + states["gradients_bytes"] + states["optimizer_bytes"]
                + acts["activations_bytes"] + states["weight_gradient_dummies_bytes"]
                + states["communication_buffers_bytes"] + states["cuda_context_bytes"])
    reserve = options.allocator_reserve_fraction * subtotal
    lines = {**states, **acts, "allocator_reserve_bytes": reserve,
             "total_bytes": subtotal + reserve + states["optimizer_step_buffers_bytes"]}
    return {key: lines[key] for key in STAGE_KEYS}


def _edges(terms: dict[str, object], stage):
    """(stage as float, holds the embedding, holds the output layer and loss) of ``stage``: V-shaped schedules
    (ZB-V, DualPipeV) hold both on device 0, DualPipe (both directions) on device 0 and device pp−1
    (DeepSeek-V3 report §3.2.1)."""
    stage_f = np.asarray(stage, dtype=float)
    pp_f = terms["pp"]
    code = np.asarray(terms["schedule"])
    v_shape, dual = V_SHAPED[code], code == Schedule.DUALPIPE.code
    ends = (stage_f == 0) | (stage_f == pp_f - 1)
    first = np.where(dual, ends, stage_f == 0)
    last = np.where(v_shape, stage_f == 0, np.where(dual, ends, stage_f == pp_f - 1))
    return stage_f, first, last


def stage_state_lines(terms: dict[str, object], stage, layer_terms: dict[str, object]) -> dict[str, np.ndarray]:
    """The lines of :func:`stage_lines` that do not depend on the activations: layers, parameters, model
    states, TE dummy weight gradients, buffers, CUDA context, optimizer-step buffers."""
    t = terms
    _, first, last = _edges(t, stage)
    copies = PARAMETER_COPIES[np.asarray(t["schedule"])]  # DualPipe keeps two stages' parameters per device
    layers, n_moe = layer_terms["layers"], layer_terms["n_moe"]

    # ---- parameters held by this GPU, and their states
    layer_params, expert_params = layer_terms["layer_params"], layer_terms["expert_params"]
    edge_params = np.where(first, t["embedding_params"], 0.0) + np.where(last, t["head_params"], 0.0)
    w_l, g_l, o_l = layer_terms["states_l"]
    w_n, g_n, o_n = sharded_state_bytes(edge_params, t["per_param"], t["divisors"])
    w_e, g_e, o_e = layer_terms["states_e"]
    w_l, g_l, o_l, w_e, g_e, o_e = (copies * x for x in (w_l, g_l, o_l, w_e, g_e, o_e))  # exact for 1 copy
    weights, gradients, optimizer = w_l + w_n + w_e, g_l + g_n + g_e, o_l + o_n + o_e
    layer_states = copies * layer_terms["layer_states"]

    # ---- buffers
    options: MemoryOptions = t["options"]  # type: ignore[assignment]
    # the optimizer step's own tensors (MemoryOptions.step_*): per parameter of this GPU's optimizer shard, and a
    # gradient bucket; new segments of the reserved pool, after the activations were freed
    shard_params = ((copies * layer_params + edge_params) / t["divisors"][2]
                    + copies * expert_params / t["expert_divisors"][2])
    step_buffers = shard_params * options.step_buffer_bytes_per_parameter + float(options.step_bucket_bytes)
    return {
        "layers": layers, "moe_layers": n_moe,
        "parameters": copies * layer_params + copies * expert_params + edge_params,
        "layer_parameters": copies * layer_params + copies * expert_params,
        "weights_bytes": weights, "gradients_bytes": gradients, "optimizer_bytes": optimizer,
        "model_states_bytes": weights + gradients + optimizer, "layer_model_states_bytes": layer_states,
        "weight_gradient_dummies_bytes": layer_terms["dummies"],  # TE's cached dummy weight gradients
        "communication_buffers_bytes": layer_terms["comm"], "cuda_context_bytes": layer_terms["context"],
        "optimizer_step_buffers_bytes": step_buffers,
    }


def stage_activation_lines(terms: dict[str, object], stage, layer_terms: dict[str, object]
                           ) -> dict[str, np.ndarray]:
    """The activation lines of :func:`stage_lines` (in-flight units, layer activations, recompute workspace,
    embedding and output activations, loss workspace, attention-score buffer, and their sum)."""
    t = terms
    stage_f, first, last = _edges(t, stage)
    pp_f, vpp_f, m = t["pp"], t["vpp"], t["m"]
    units = in_flight_micro_batches(t["schedule"], pp_f, stage_f, vpp_f, m)
    stage_layer_acts = layer_terms["stage_layer_acts"]
    layer_acts = units / vpp_f * stage_layer_acts
    workspace = layer_terms["workspace"]
    embed_acts = np.where(first, np.minimum(units, m), 0.0) * t["embedding_act"]
    out_count = np.where(last, t["output_count"], 0.0)
    output_acts = out_count * t["output_act"]
    loss_ws = out_count * t["loss"]
    score_buffer = np.where(layer_terms["layers"] > 0, t["score_buffer"], 0.0)  # a stage running attention holds it
    return {
        "in_flight_micro_batches": units, "activations_per_layer_bytes": layer_terms["per_layer"],
        "layer_activations_bytes": layer_acts, "recompute_workspace_bytes": workspace,
        "embedding_activations_bytes": embed_acts, "output_activations_bytes": output_acts,
        "loss_workspace_bytes": loss_ws, "attention_buffer_bytes": score_buffer,
        "activations_bytes": layer_acts + workspace + embed_acts + output_acts + loss_ws + score_buffer,
    }


def stage_memory(dims: ModelDims, stage, **inputs) -> dict[str, np.ndarray]:
    """:func:`stage_lines` of ``stage`` for the configuration ``inputs`` (keywords of :func:`config_terms`)."""
    return stage_lines(dims, config_terms(dims, **inputs), stage)
