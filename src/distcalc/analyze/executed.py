"""Step time of the schedules that :mod:`distcalc.schedules` executes (ZB-H2, ZB-V, DualPipe, DualPipeV).

The four original schedules keep their closed forms (:func:`distcalc.pipeline.pipeline_time_s`, equal to
their executed plans on uniform stages, tests); these run their plan with the configuration's per-pass
times. Per virtual stage j (a chunk of ``c`` of a device's share, c = 1/2 on V-shaped schedules, 1 on
DualPipe) with ``n_j = c·L/pp`` transformer layers (one fewer on the first and last chunk with the
embedding/loss pipeline split):

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

import numpy as np

from distcalc.parallel import Schedule
from distcalc.schedules import PassTimes, cached_plan, cached_program, execute, get_schedule


def executed_mask(schedule: np.ndarray) -> np.ndarray:
    """Configurations whose schedule is executed rather than given by a closed form."""
    return Schedule.executed(schedule)


def _stage_times(S: int, c: float, t: dict[str, np.ndarray]) -> PassTimes:
    """Per-virtual-stage (S, n) pass times from per-configuration per-layer terms ``t``."""
    layers = np.repeat((c * t["lps_mid"])[None, :], S, axis=0)
    layers[0] -= t["slots"]
    layers[-1] -= t["slots"]
    wgrad = t["wgrad"]
    message = t["p2p_exposed"] / 2  # one of the boundary's two messages, when it blocks the pass
    f = layers * t["layer_forward"] + message
    b = layers * (t["layer_backward"] - wgrad) + message
    w = layers * wgrad
    f[0] += t["emb_f"] + t["emb_comm"] / 2
    b[0] += t["emb_comm"] / 2
    w[0] += t["emb_b"]
    f[-1] += t["out_f"] + t["head_comm"] / 2
    b[-1] += t["out_b"] - t["out_wg"] + t["head_comm"] / 2
    w[-1] += t["out_wg"]
    return PassTimes(f, b, w, t["p2p_latency"] / 2, layers * t["ep_f"], layers * (t["ep_all"] - t["ep_f"]))


def executed_pipeline_s(schedule: np.ndarray, pp: np.ndarray, m: np.ndarray, terms: dict[str, np.ndarray]
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(pipeline time, busiest device's busy time) of every configuration (NaN where not executed).

    ``terms``: per-configuration arrays ``lps_mid``, ``slots``, ``layer_forward``, ``layer_backward``,
    ``wgrad``, ``ep_f``, ``ep_all``, ``emb_f``, ``emb_b``, ``emb_comm``, ``out_f``, ``out_b``, ``out_wg``,
    ``head_comm``,
    ``p2p_exposed`` (a boundary's blocking Send/Recv pair per micro-batch), ``p2p_latency`` (the same pair when
    overlapped: half of it delays each dependency across devices)."""
    mask = executed_mask(schedule)
    pipeline = np.full(schedule.shape, np.nan)
    busy = np.full(schedule.shape, np.nan)
    keys = np.stack([schedule[mask], pp[mask], m[mask]], axis=1)
    index = np.flatnonzero(mask)
    for key in np.unique(keys, axis=0):
        rows = index[np.all(keys == key, axis=1)]
        code, p, micro = (int(x) for x in key)
        plan = cached_plan(code, p, micro)
        sub = {k: np.asarray(v, dtype=float)[rows] for k, v in terms.items()}
        ex = execute(plan, _stage_times(plan.virtual_stages, plan.chunk_fraction, sub), program=cached_program(code, p, micro))
        pipeline[rows] = ex.step_s(get_schedule(code).tiles_iterations)
        busy[rows] = ex.busy_s.max(axis=0)
    return pipeline, busy
