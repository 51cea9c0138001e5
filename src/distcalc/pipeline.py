"""Pipeline schedules: bubble, step time, in-flight micro-batches, and an event simulator of the schedule.

Symbols: p stages, m micro-batches per step (per data-parallel rank), v model chunks per stage
(interleaved), t_f / t_b / t_w the forward, backward-input and backward-weight time of ONE micro-batch on
ONE stage (all its chunks; for schedules that do not split the backward, t_b includes t_w).

Closed forms (vectorised over NumPy arrays; schedule codes as :class:`distcalc.parallel.Schedule.code`:
gpipe 0, 1f1b 1, interleaved 2, zero-bubble 3):

* GPipe (Huang et al. 2019) and 1F1B (PipeDream-Flush, Narayanan et al. 2021 §2.2.1):
  ``T = (m + p − 1)·(t_f + t_b)``; bubble fraction ``(p − 1)/m`` of the ideal ``m·(t_f + t_b)``.
* Interleaved 1F1B (Narayanan et al. 2021 §2.2.2): ``T = (m + (p − 1)/v)·(t_f + t_b)``; bubble
  ``(p − 1)/(v·m)``; needs m a multiple of p (Megatron-LM).
* ZB-H1 (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", arXiv:2401.10241, §3.1 and Fig. 3): the
  backward is split into B (input gradient, on the critical path) and W (weight gradient, deferred to
  fill the bubbles); ``T = m·(t_f + t_b + t_w) + (p − 1)·(t_f + t_b − t_w)`` (t_w ≤ t_f + t_b), i.e. a
  third of the 1F1B bubble when t_f = t_b = t_w, with the same activation memory as 1F1B.

Stages that are not equally loaded (the last stage also computes the logits): in the steady state every
stage waits for the slowest, so ``T ≈ (m − 1 + …)`` uses ``t_max`` for the m steady-state slots and the
mean stage time for the fill/drain (:func:`pipeline_time_s`); :func:`simulate_schedule` (the schedule
objects of :mod:`distcalc.schedules` executed) checks it.

In-flight micro-batches (activation memory) per stage s (0 = first): GPipe m; 1F1B and ZB-H1
``min(m, p − s)``; interleaved Megatron warm-up ``2(p − s − 1) + (v − 1)·p + 1`` chunk micro-batches,
i.e. ``/v`` stage micro-batches — for s = 0, ``p·(1 + (p − 1)/(p·v))`` (Korthikanti et al. 2022 §4.2.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distcalc.parallel import Schedule
from distcalc.schedules import PassTimes, execute, get_schedule

ArrayLike = Any


def bubble_fraction(schedule: ArrayLike, pp: ArrayLike, micro_batches: ArrayLike, vpp: ArrayLike = 1,
                    weight_fraction: ArrayLike = 1.0 / 3.0) -> ArrayLike:
    """Idle time of a stage as a fraction of its ideal busy time ``m·(t_f + t_b)`` (uniform stages).

    ``weight_fraction`` = t_w / (t_f + t_b + t_w) for ZB-H1 (1/3 when F, B, W cost the same)."""
    p = np.asarray(pp, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    v = np.asarray(vpp, dtype=float)
    s = np.asarray(schedule)
    w = np.asarray(weight_fraction, dtype=float)
    base = (p - 1.0) / m
    return np.where(s == Schedule.INTERLEAVED.code, base / v,
                    np.where(s == Schedule.ZERO_BUBBLE.code, base * np.maximum(1.0 - 2.0 * w, 0.0), base))


def pipeline_time_s(schedule: ArrayLike, pp: ArrayLike, micro_batches: ArrayLike, vpp: ArrayLike,
                    stage_max_s: ArrayLike, stage_mean_s: ArrayLike, weight_s: ArrayLike = 0.0) -> ArrayLike:
    """Time of the pipelined part of a step.

    ``stage_max_s`` / ``stage_mean_s``: forward+backward time of one micro-batch on the slowest / an
    average stage (P2P on the critical path included); ``weight_s``: the W part of the slowest stage's
    backward (only the zero-bubble schedule moves it). Steady state runs at the slowest stage:
    ``m·t_max`` plus a fill/drain of ``(p − 1)/v·t_mean`` (GPipe, 1F1B: v = 1; ZB-H1: the drain is
    shortened by W, ``(p − 1)·max(t_mean − 2·t_w, 0)``)."""
    s = np.asarray(schedule)
    p_minus_1 = np.asarray(pp, dtype=float) - 1.0
    v = np.where(s == Schedule.INTERLEAVED.code, np.asarray(vpp, dtype=float), 1.0)
    mean = np.asarray(stage_mean_s)
    fill = p_minus_1 / v * mean
    zero_bubble = s == Schedule.ZERO_BUBBLE.code
    if np.any(zero_bubble):  # (skips work only; np.where picks `fill` elsewhere)
        fill = np.where(zero_bubble, p_minus_1 * np.maximum(mean - 2.0 * np.asarray(weight_s), 0.0), fill)
    return np.asarray(micro_batches, dtype=float) * np.asarray(stage_max_s) + fill


def in_flight_micro_batches(schedule: ArrayLike, pp: ArrayLike, micro_batches: ArrayLike, vpp: ArrayLike = 1,
                            stage: ArrayLike = 0) -> ArrayLike:
    """Micro-batches whose activations stage ``stage`` holds at its peak (in units of one full stage's
    activations; interleaved chunk micro-batches count 1/v)."""
    p = np.asarray(pp, dtype=float)
    m = np.asarray(micro_batches, dtype=float)
    v = np.asarray(vpp, dtype=float)
    s = np.asarray(stage, dtype=float)
    s_code = np.asarray(schedule)
    one_f_one_b = np.minimum(m, p - s)
    interleaved = np.minimum(m * v, 2.0 * (p - s - 1.0) + (v - 1.0) * p + 1.0) / v
    return np.where(s_code == Schedule.GPIPE.code, m, np.where(s_code == Schedule.INTERLEAVED.code, interleaved, one_f_one_b))


def p2p_transfers_per_micro_batch(schedule: ArrayLike, pp: ArrayLike, vpp: ArrayLike = 1) -> ArrayLike:
    """Send/Recv of one stage per micro-batch in EACH direction: v chunk boundaries (0 without pipeline)."""
    v = np.where(np.asarray(schedule) == Schedule.INTERLEAVED.code, np.asarray(vpp, dtype=float), 1.0)
    return np.where(np.asarray(pp) > 1, v, 0.0)


# ----------------------------------------------------------------------------------------------- simulator
@dataclass(frozen=True)
class Event:
    """One operation on the timeline: kind 'F', 'B' (the backward; only its input-gradient part where the
    schedule runs W apart), 'W' or 'F&B' (DualPipe's overlapped pair; ``micro_batch`` is the forward's, ``chunk``
    the backward's) on stage ``stage``, from ``start_s`` to ``end_s``."""

    stage: int
    kind: str
    micro_batch: int
    chunk: int
    start_s: float
    end_s: float


@dataclass
class Timeline:
    """The simulated schedule: events and the makespan (seconds)."""

    events: list[Event] = field(default_factory=list)
    makespan_s: float = 0.0

    def busy_s(self, stage: int) -> float:
        """Busy time of one stage."""
        return sum(e.end_s - e.start_s for e in self.events if e.stage == stage)

    def bubble_fraction(self, stage: int = 0) -> float:
        """Idle time of ``stage`` over the makespan, relative to its busy time."""
        busy = self.busy_s(stage)
        return (self.makespan_s - busy) / busy


def simulate_schedule(schedule: int, pp: int, micro_batches: int, vpp: int = 1, forward_s: Any = 1.0,
                      backward_s: Any = 2.0, weight_s: Any = 0.0, p2p_s: float = 0.0) -> Timeline:
    """Discrete-event simulation of a pipeline schedule: the schedule object's plan
    (:mod:`distcalc.schedules`, by integer code) executed with these times.

    ``forward_s``/``backward_s``/``weight_s``: per-stage times of ONE micro-batch over all chunks of the
    stage (scalars or sequences of length p); each chunk takes its share (1/v interleaved, 1/2 V-shaped).
    ``backward_s`` includes W except for the schedules that split the backward (zero-bubble and the ZB /
    DualPipe family), where W (``weight_s``) is a separate pass. ``p2p_s`` delays every dependency between
    two devices."""
    target = get_schedule(int(schedule))
    plan = target.plan(int(pp), int(micro_batches), int(vpp) if schedule == Schedule.INTERLEAVED.code else 1)
    device = np.array([plan.device_of(0, j) for j in range(plan.virtual_stages)])

    def per_stage(x: Any) -> np.ndarray:
        return np.broadcast_to(np.asarray(x, dtype=float), (plan.devices,))[device] * plan.chunk_fraction

    weight = weight_s if target.split_backward else 0.0
    run = execute(plan, PassTimes(per_stage(forward_s), per_stage(backward_s), per_stage(weight), p2p_s),
                  keep_events=True)
    timeline = Timeline()
    for stage, op, start, end in run.events:
        kind = "F&B" if len(op) == 2 else "B" if op[0].kind.value == "BW" else op[0].kind.value
        timeline.events.append(Event(stage, kind, op[0].micro_batch, op[-1].chunk, float(start[0]), float(end[0])))
    timeline.makespan_s = float(run.makespan_s[0])
    return timeline
