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

from collections import deque
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


_KIND_INDEX = {PassKind.F: 0, PassKind.B: 1, PassKind.W: 2, PassKind.BW: 3}
_PRODUCT = {PassKind.F: 0, PassKind.B: 1, PassKind.BW: 1, PassKind.W: 2}  # what a pass makes: F, B (or BW), W


def _keys(p, stages: int, micro_batches: int) -> tuple[int, int]:
    """(key of what ``p`` makes, key of the output it needs or −1): integer keys (product, micro-batch, stage).
    F of stage j needs F of j − 1; B/BW of j needs B of j + 1 (the last stage's, its own F); W needs its B."""
    unit = micro_batches * stages
    own = _PRODUCT[p.kind] * unit + p.micro_batch * stages + p.stage
    if p.kind is PassKind.F:
        need = -1 if p.stage == 0 else own - 1
    elif p.kind is PassKind.W:
        need = own - unit
    else:
        need = own - unit if p.stage == stages - 1 else own + 1
    return own, need


@dataclass(frozen=True)
class Program:
    """A plan compiled for execution: its operations in one order that respects every dependency, each
    with its device, what it waits for (operation index, whether across devices) and how its time is made
    (``kind`` 0–3 = F, B, W, BW of ``stage``; −1 = an overlapped pair of forward ``stage`` and backward
    ``pair_stage``)."""

    ops: tuple[Op, ...]
    device: np.ndarray
    deps: tuple[tuple[tuple[int, bool], ...], ...]
    kind: np.ndarray
    stage: np.ndarray
    pair_stage: np.ndarray


def compile_plan(plan: Plan) -> Program:
    """Order the plan's operations globally (each device's order kept; an operation after the ones it waits
    for): a device that waits on a pass not yet placed resumes when that pass is placed. :class:`ConfigError`
    if the order deadlocks (a plan bug)."""
    S = plan.virtual_stages
    micro_batches = max(ps.micro_batch for order in plan.orders for op in order for ps in op) + 1
    where: dict[int, tuple[int, int]] = {}
    waiting: dict[int, list[int]] = {}
    position = [0] * plan.devices
    ops, device, deps, kind, stage, pair_stage = [], [], [], [], [], []
    queue = deque(range(plan.devices))
    while queue:
        d = queue.popleft()
        order = plan.orders[d]
        while position[d] < len(order):
            op = order[position[d]]
            keys = [_keys(ps, S, micro_batches) for ps in op]
            missing = next((need for _, need in keys if need >= 0 and need not in where), None)
            if missing is not None:
                waiting.setdefault(missing, []).append(d)
                break
            deps.append(tuple((where[need][0], where[need][1] != d) for _, need in keys if need >= 0))
            for own, _ in keys:
                where[own] = (len(ops), d)
                if own in waiting:
                    queue.extend(waiting.pop(own))
            ops.append(op)
            device.append(d)
            if len(op) == 1:
                kind.append(_KIND_INDEX[op[0].kind])
                stage.append(op[0].stage)
                pair_stage.append(-1)
            else:
                kind.append(-1)
                stage.append(next(ps.stage for ps in op if ps.kind is PassKind.F))
                pair_stage.append(next(ps.stage for ps in op if ps.kind is not PassKind.F))
            position[d] += 1
    if len(ops) != sum(len(o) for o in plan.orders):
        raise ConfigError(f"schedule {plan.name} deadlocked at positions {position} (inconsistent order)")
    return Program(tuple(ops), np.array(device), tuple(deps), np.array(kind), np.array(stage), np.array(pair_stage))


def _durations(program: Program, stage_arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    """(operations, n) durations: one pass's time, or a pair's ``F + BW − hidden``."""
    f, b, w, fc, bc = stage_arrays
    table = np.stack([f, b, w, b + w])  # (4, S, n)
    single = program.kind >= 0
    out = table[np.where(single, program.kind, 0), program.stage]
    if not single.all():
        pairs = np.flatnonzero(~single)
        jf, jb = program.stage[pairs], program.pair_stage[pairs]
        f_total, b_total = f[jf], b[jb] + w[jb]
        hidden = np.minimum(fc[jf], b_total - bc[jb]) + np.minimum(bc[jb], f_total - fc[jf])
        out[pairs] = f_total + b_total - hidden
    return out


def execute(plan: Plan, times: PassTimes, keep_events: bool = False, program: Program | None = None) -> Execution:
    """Run ``plan`` with ``times`` (``program``: :func:`compile_plan` of it, when the caller caches one)."""
    program = compile_plan(plan) if program is None else program
    *stage_arrays, p2p = times.arrays(plan.virtual_stages)
    durations = _durations(program, tuple(stage_arrays))
    zero = np.zeros(p2p.shape[0])
    free = [zero] * plan.devices
    first: list[np.ndarray | None] = [None] * plan.devices
    ends = np.empty_like(durations)
    starts = np.empty_like(durations) if keep_events else None
    for k, d in enumerate(program.device.tolist()):
        ready = free[d]
        for j, across in program.deps[k]:
            ready = np.maximum(ready, ends[j] + p2p if across else ends[j])
        if first[d] is None:
            first[d] = ready
        ends[k] = ready + durations[k]
        free[d] = ends[k]
        if starts is not None:
            starts[k] = ready
    busy = np.zeros((plan.devices, zero.size))
    np.add.at(busy, program.device, durations)
    events = ([(int(d), op, starts[k], ends[k]) for k, (d, op) in enumerate(zip(program.device, program.ops))]
              if starts is not None else [])
    return Execution(plan, np.array([x if x is not None else zero for x in first]), np.array(free), busy, events)


def peak_in_flight(plan: Plan) -> list[float]:
    """Per device, the most activations held at once, in units of one device's per-micro-batch share: a
    chunk's forward adds ``chunk_fraction``; a full backward (BW) frees it; a split backward frees it only at
    its W, because the weight gradient still needs the layer inputs (Qi et al. 2024 Table 1: after B,
    M_W = 32·b·s·h of a layer's 34·b·s·h + 5·a·s²·b remain until W; the reference ZB-V scheduler counts
    memory the same way). Within an overlapped F&B pair the forward's activations exist before the
    backward's are freed."""
    peaks = []
    for order in plan.orders:
        held = peak = 0.0
        for op in order:
            for ps in op:
                if ps.kind is PassKind.F:
                    held += plan.chunk_fraction
                    peak = max(peak, held)
                elif ps.kind is not PassKind.B:
                    held -= plan.chunk_fraction
        peaks.append(peak)
    return peaks
