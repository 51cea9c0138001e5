"""Execute a :class:`~distcalc.schedules.base.Plan` with real per-pass times: start, end and idle time of
every operation on every device, for many configurations at once (times are NumPy arrays over them).

Each device runs its operations in the plan's order; an operation starts when the device is free and its
passes' inputs are there: F of virtual stage j needs F of j − 1, B (or BW) of j needs B of j + 1 (the last
stage's needs its own F), W needs its own B. An input made on another device arrives ``p2p_s`` later (the
Send/Recv of one activation or gradient; batched isend/irecv as in Megatron-LM, the Zero Bubble fork and
DualPipe, so the sender does not wait). An overlapped pair (DualPipe's F&B) takes
``F + BW − hidden`` where ``hidden`` is the communication of each half that the other half's compute
covers (DeepSeek-V3 report §3.2.1: the all-to-all of one chunk runs under the other chunk's compute).

The order fixes every decision, so times only move the events: the same plan executes exactly for any
times, and the peak in-flight activations (:func:`peak_in_flight`) do not depend on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from distcalc.errors import ConfigError
from distcalc.schedules.base import Op, PassKind, Plan


@dataclass(frozen=True)
class PassTimes:
    """Per-virtual-stage pass times, each shaped (S, n) or broadcastable to it (n configurations).

    ``backward_s`` is the input-gradient pass B; a full backward BW takes ``backward_s + weight_s``.
    ``forward_comm_s`` / ``backward_comm_s``: the part of F / BW that is communication an overlapped
    partner can hide (0 where nothing overlaps). ``p2p_s``: one Send/Recv between devices, shape (n,)."""

    forward_s: Any
    backward_s: Any
    weight_s: Any
    p2p_s: Any = 0.0
    forward_comm_s: Any = 0.0
    backward_comm_s: Any = 0.0

    def arrays(self, stages: int) -> tuple[np.ndarray, ...]:
        """(f, b, w, f_comm, bw_comm) as (S, n) float arrays and p2p as (n,): a scalar is the same on every
        stage, a 1-d array one value per stage, a 2-d array (S, n)."""
        parts = [np.asarray(x, dtype=float) for x in (self.forward_s, self.backward_s, self.weight_s,
                                                       self.forward_comm_s, self.backward_comm_s)]
        parts = [x.reshape(1, 1) if x.ndim == 0 else x.reshape(-1, 1) if x.ndim == 1 else x for x in parts]
        p2p = np.asarray(self.p2p_s, dtype=float).reshape(-1)
        n = max([x.shape[1] for x in parts] + [p2p.size])
        return (*[np.broadcast_to(x, (stages, n)) for x in parts], np.broadcast_to(p2p, (n,)))


@dataclass
class Execution:
    """Result of executing a plan: per device (rows) and configuration (columns)."""

    plan: Plan
    first_start_s: np.ndarray
    last_end_s: np.ndarray
    busy_s: np.ndarray
    events: list[tuple[int, Op, np.ndarray, np.ndarray]] = field(default_factory=list, repr=False)

    @property
    def makespan_s(self) -> np.ndarray:
        """From the first pass anywhere to the last pass anywhere."""
        return self.last_end_s.max(axis=0) - self.first_start_s.min(axis=0)

    @property
    def span_s(self) -> np.ndarray:
        """Per device: its last end minus its first start (p, n)."""
        return self.last_end_s - self.first_start_s

    def step_s(self, tiles_iterations: bool) -> np.ndarray:
        """Time one step occupies the pipeline: the makespan, or with tiling iterations the busiest span."""
        return self.span_s.max(axis=0) if tiles_iterations else self.makespan_s

    def bubble_s(self, tiles_iterations: bool) -> np.ndarray:
        """Step time minus the busiest device's busy time (the papers' bubble)."""
        return self.step_s(tiles_iterations) - self.busy_s.max(axis=0)


def _duration(op: Op, stage_arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    f, b, w, fc, bc = stage_arrays
    total = []
    for p in op:
        j = p.stage
        total.append(f[j] if p.kind is PassKind.F else b[j] if p.kind is PassKind.B else w[j] if p.kind is PassKind.W
                     else b[j] + w[j])
    if len(op) == 1:
        return total[0]
    fwd = next(p for p in op if p.kind is PassKind.F)
    bwd = next(p for p in op if p.kind is not PassKind.F)
    f_total, b_total = f[fwd.stage], b[bwd.stage] + w[bwd.stage]
    f_comm, b_comm = fc[fwd.stage], bc[bwd.stage]
    hidden = np.minimum(f_comm, b_total - b_comm) + np.minimum(b_comm, f_total - f_comm)
    return total[0] + total[1] - hidden


def _dependency(p, stages: int) -> tuple[str, int, int] | None:
    """Key (F/B/W, micro-batch, stage) of the pass whose output ``p`` needs (None: the first forward)."""
    if p.kind is PassKind.F:
        return None if p.stage == 0 else ("F", p.micro_batch, p.stage - 1)
    if p.kind is PassKind.W:
        return ("B", p.micro_batch, p.stage)
    return ("F", p.micro_batch, p.stage) if p.stage == stages - 1 else ("B", p.micro_batch, p.stage + 1)


def _key(p) -> tuple[str, int, int]:
    return ("F" if p.kind is PassKind.F else "W" if p.kind is PassKind.W else "B", p.micro_batch, p.stage)


def execute(plan: Plan, times: PassTimes, keep_events: bool = False) -> Execution:
    """Run ``plan`` with ``times``; :class:`ConfigError` if the order deadlocks (a plan bug)."""
    S, p = plan.virtual_stages, plan.devices
    *stage_arrays, p2p = times.arrays(S)
    stage_arrays = tuple(stage_arrays)
    n = p2p.shape[0]
    zero = np.zeros(n)
    done: dict[tuple[str, int, int], tuple[np.ndarray, int]] = {}
    free = [zero] * p
    first: list[np.ndarray | None] = [None] * p
    busy = [zero] * p
    position = [0] * p
    events: list[tuple[int, Op, np.ndarray, np.ndarray]] = []
    remaining = sum(len(o) for o in plan.orders)
    while remaining:
        progressed = False
        for d in range(p):
            order = plan.orders[d]
            while position[d] < len(order):
                op = order[position[d]]
                ready = free[d]
                blocked = False
                for ps in op:
                    key = _dependency(ps, S)
                    if key is None:
                        continue
                    if key not in done:
                        blocked = True
                        break
                    end, where = done[key]
                    ready = np.maximum(ready, end + p2p if where != d else end)
                if blocked:
                    break
                duration = _duration(op, stage_arrays)
                end = ready + duration
                for ps in op:
                    done[_key(ps)] = (end, d)
                if first[d] is None:
                    first[d] = ready
                busy[d] = busy[d] + duration
                free[d] = end
                if keep_events:
                    events.append((d, op, ready, end))
                position[d] += 1
                remaining -= 1
                progressed = True
        if not progressed:
            raise ConfigError(f"schedule {plan.name} deadlocked at positions {position} (inconsistent order)")
    return Execution(plan, np.array([f if f is not None else zero for f in first]), np.array(free),
                     np.array(busy), events)


def peak_in_flight(plan: Plan) -> list[float]:
    """Per device, the most activations held at once, in units of one device's per-micro-batch share
    (a chunk's forward adds ``chunk_fraction``, its B or BW releases it; W keeps only weight-gradient
    inputs, counted with B as the papers do). Within an overlapped F&B pair the forward's activations
    exist before the backward's are freed."""
    peaks = []
    for order in plan.orders:
        held = peak = 0.0
        for op in order:
            for ps in op:
                if ps.kind is PassKind.F:
                    held += plan.chunk_fraction
                    peak = max(peak, held)  # an overlapped pair allocates its forward before its backward frees
                elif ps.kind is not PassKind.W:
                    held -= plan.chunk_fraction
        peaks.append(peak)
    return peaks
