"""Step time of the schedules that :mod:`distcalc.schedules` executes (ZB-H2, ZB-V, DualPipe, DualPipeV, and
interleaved 1F1B with uneven first/last stages).

The four original schedules keep their closed forms (:func:`distcalc.pipeline.pipeline_time_s`, equal to
their executed plans on uniform stages, tests); these run their plan with the configuration's per-pass
times. Per virtual stage j (a chunk of ``c`` of a device's share, c = 1/2 on V-shaped schedules, 1 on
DualPipe, 1/v interleaved) with ``n_j = c·L/pp`` transformer layers (one fewer on the first and last chunk
with the embedding/loss pipeline split; with uneven ends, Megatron-Core ``--decoder-first/last-pipeline-num-
layers``, ``c·first`` on every chunk of the first device and ``c·last`` on the last device's, the other
devices' chunks sharing the rest — ``get_transformer_layer_offset``'s interleaved layout):

* F_j = n_j·layer forward (+ embedding forward on j = 0, output layer forward on j = S − 1, each with half
  of its TP collectives), B_j = n_j·(layer backward − weight-gradient GEMMs) (+ the output layer's input
  gradient and loss backward on j = S − 1, the other half of the ends' collectives), W_j = n_j·weight-gradient
  GEMMs (+ the embedding-table gradient on j = 0, the logits weight-gradient GEMM on j = S − 1);
* every chunk's F and B send one message each (the activation, the gradient: half of a boundary's
  Send/Recv pair, :func:`distcalc.traffic.pp_boundary_messages`), so V-shaped schedules, whose micro-batches
  cross a device boundary twice per device, move twice 1F1B's pipeline traffic (the Zero Bubble authors'
  table: ZB-V 2×). Blocking P2P (:class:`~distcalc.analyze.options.AnalyzeOptions`
  ``pipeline_p2p_overlap`` False, Megatron-LM) adds that message to the pass; overlapped P2P delays the
  dependency on the other device by it instead;
* an overlapped DualPipe pair hides the expert-parallel all-to-all of each half behind the other half's
  compute (DeepSeek-V3 report §3.2.1).

The step's pipeline time is the makespan, or the busiest device's span when the schedule tiles iterations
(optimizer post-validation, Qi et al. 2024 §4).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from typing import Any

import numpy as np

from distcalc.analyze.gather import UnionRows
from distcalc.parallel import Schedule
from distcalc.row_groups import distinct_columns, row_groups
from distcalc.schedules import PassTimes, cached_plan, cached_program, execute, get_schedule


@dataclass(frozen=True, slots=True)
class ExecutedTerms:
    """The per-configuration terms an executed schedule's pass times are built from (:func:`_stage_times`).

    Every field is an array over the configurations, a scalar broadcast to them, or a
    :class:`~distcalc.analyze.gather.UnionRows` (one value per union row, taken at the executed rows only).
    Layer counts are per pipeline stage (a device's share, before the chunking into virtual stages); times are
    per micro-batch. The field order is the column order of the distinct-row search in
    :func:`executed_pipeline_s`."""

    middle_stage_layers: Any  #: transformer layers of a middle pipeline stage (parallel.stage_layer_split)
    #: 1 where the embedding and the loss each take a layer slot in the split, else 0
    #: (parallel.pipeline_slots_offset): the first and last virtual stages hold one layer fewer
    embedding_loss_slot_layers: Any
    first_stage_extra_layers: Any  #: uneven ends: the first stage's layers beyond a middle stage's (0 when even)
    last_stage_extra_layers: Any  #: uneven ends: the last stage's layers beyond a middle stage's (0 when even)
    layer_forward_s: Any  #: one layer's forward: compute + exposed TP/CP collectives + EP AllToAll (core)
    layer_backward_s: Any  #: one layer's backward: compute (dgrad + wgrad) + recompute + the rest of its comm
    layer_wgrad_s: Any  #: one layer's weight-gradient GEMMs (Zero Bubble's W pass)
    layer_ep_forward_s: Any  #: one layer's forward EP AllToAll × MoE-layer fraction
    layer_ep_all_s: Any  #: one layer's EP AllToAll, forward + backward, × MoE-layer fraction
    embedding_forward_s: Any  #: input embedding forward (compute.head_times)
    embedding_backward_s: Any  #: input embedding backward: the table's gradient (compute.head_times)
    embedding_tp_s: Any  #: the embedding's TP collectives, half in the forward and half in the backward
    output_forward_s: Any  #: output layer + loss forward (compute.head_times)
    output_backward_s: Any  #: output layer + loss backward, its weight gradient included (compute.head_times)
    output_wgrad_s: Any  #: the output layer's weight-gradient GEMM (the last stage's W pass)
    output_tp_s: Any  #: the output layer's TP collectives, half in the forward and half in the backward
    p2p_exposed_s: Any  #: one boundary's blocking Send/Recv pair per micro-batch (0 when P2P overlaps)
    p2p_latency_s: Any  #: the same pair when overlapped: half of it delays each dependency across devices


def executed_mask(schedule: np.ndarray, uneven: np.ndarray | bool = False) -> np.ndarray:
    """Configurations whose schedule is executed rather than given by a closed form: ZB-H2 and the codes
    after it, and the interleaved schedule with uneven ends (``uneven``: first/last stage layers given)."""
    schedule = np.asarray(schedule)
    return Schedule.executed(schedule) | ((schedule == Schedule.INTERLEAVED.code) & np.asarray(uneven, dtype=bool))


def _stage_times(device: np.ndarray, c: float, t: ExecutedTerms) -> PassTimes:
    """Per-virtual-stage (S, n) pass times from per-configuration terms ``t``; ``device[j]``: the device holding
    virtual stage j (its first and last devices take ``first_stage_extra_layers`` / ``last_stage_extra_layers``
    more layers, the uneven ends, split evenly over their chunks as Megatron-Core does)."""
    S = device.size
    layers = np.repeat((c * t.middle_stage_layers)[None, :], S, axis=0)
    layers += c * np.where((device == 0)[:, None], t.first_stage_extra_layers[None, :], 0.0)
    layers += c * np.where((device == device.max())[:, None], t.last_stage_extra_layers[None, :], 0.0)
    layers[0] -= t.embedding_loss_slot_layers
    layers[-1] -= t.embedding_loss_slot_layers
    wgrad = t.layer_wgrad_s
    message = t.p2p_exposed_s / 2  # one of the boundary's two messages, when it blocks the pass
    f = layers * t.layer_forward_s + message
    b = layers * (t.layer_backward_s - wgrad) + message
    w = layers * wgrad
    f[0] += t.embedding_forward_s + t.embedding_tp_s / 2
    b[0] += t.embedding_tp_s / 2
    w[0] += t.embedding_backward_s
    f[-1] += t.output_forward_s + t.output_tp_s / 2
    b[-1] += t.output_backward_s - t.output_wgrad_s + t.output_tp_s / 2
    w[-1] += t.output_wgrad_s
    return PassTimes(f, b, w, t.p2p_latency_s / 2, layers * t.layer_ep_forward_s,
                     layers * (t.layer_ep_all_s - t.layer_ep_forward_s))


@lru_cache(maxsize=512)
def _stage_devices(code: int, pp: int, micro_batches: int, vpp: int) -> np.ndarray:
    """The device holding each virtual stage of the plan (its first micro-batch's map; read-only)."""
    plan = cached_plan(code, pp, micro_batches, vpp)
    device = np.array([plan.device_of(0, j) for j in range(plan.virtual_stages)])
    device.flags.writeable = False
    return device


def executed_pipeline_s(schedule: np.ndarray, pp: np.ndarray, m: np.ndarray, terms: ExecutedTerms,
                        vpp: np.ndarray | int = 1, uneven: np.ndarray | bool = False, busy: bool = True
                        ) -> tuple[np.ndarray, np.ndarray | None]:
    """(pipeline time, busiest device's busy time) of every configuration (NaN where not executed).

    ``terms``: the configurations' :class:`ExecutedTerms` (each field taken at the executed rows only).
    ``busy`` False: the busiest device's busy time is not computed (None; the step time needs only the
    pipeline time)."""
    mask = executed_mask(schedule, uneven)
    pipeline = np.full(schedule.shape, np.nan)
    busiest = np.full(schedule.shape, np.nan) if busy else None
    index = np.flatnonzero(mask)
    if not index.size:
        return pipeline, busiest
    vpp = np.broadcast_to(np.asarray(vpp), schedule.shape)
    keys = [np.asarray(x)[index] for x in (schedule, pp, m, vpp)]
    union_index = {}  # UnionRows terms (one value per union row): taken at the executed rows only

    def at_executed(x) -> np.ndarray:
        if isinstance(x, UnionRows):
            if id(x.index) not in union_index:
                union_index[id(x.index)] = x.index[index]
            return x.at(index, union_index[id(x.index)])
        return np.broadcast_to(np.asarray(x, dtype=float), schedule.shape)[index]

    columns = [at_executed(getattr(terms, f.name)) for f in fields(ExecutedTerms)]
    # configurations whose plan and pass times are the same bits (they differ only where the plan's times do
    # not: the ZeRO stage, the optimizer) share a run; every column runs alone, so each plan runs once per
    # distinct row of its configurations' times (found once for all the plans), scattered back at the end
    first, inverse = distinct_columns(keys + columns)
    plans = list(row_groups([key[first] for key in keys]))
    # the distinct rows plan by plan: each plan's times are one slice of the table (views, nothing gathered)
    order = np.concatenate([group for _, group in plans])
    table = np.stack([column[first[order]] for column in columns])  # (terms, distinct rows), rows contiguous
    distinct_pipeline, distinct_busy = np.empty(first.size), np.empty(first.size) if busy else None
    lo = 0
    for (code, p, micro, v), group in plans:
        at = slice(lo, lo + group.size)
        lo = at.stop
        plan = cached_plan(code, p, micro, v)
        times = ExecutedTerms(*table[:, at])  # one row of the table per field, in field order
        ex = execute(plan, _stage_times(_stage_devices(code, p, micro, v), plan.chunk_fraction, times),
                     program=cached_program(code, p, micro, v), busy=busy)
        distinct_pipeline[at] = ex.step_s(get_schedule(code).tiles_iterations)
        if busy:
            distinct_busy[at] = ex.busy_s.max(axis=0)
    position = np.empty_like(order)  # each distinct row's place in the plan-by-plan order
    position[order] = np.arange(order.size)
    at_rows = position[inverse]
    pipeline[index] = distinct_pipeline[at_rows]
    if busy:
        busiest[index] = distinct_busy[at_rows]
    return pipeline, busiest
