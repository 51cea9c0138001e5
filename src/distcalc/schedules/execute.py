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

import functools
import operator
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from distcalc.errors import ConfigError
from distcalc.schedules.base import Op, PassKind, Plan
from distcalc.schedules.row_runner import RowPlan, device_sums, row_plan, run_rows


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
    busy_s: np.ndarray | None  # None: not summed (execute's ``busy`` False)
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
#: Above this many configurations :func:`execute` always runs the operations one at a time
#: (:mod:`distcalc.schedules.row_runner`) instead of wave by wave; below it, whichever
#: :func:`runs_waves` expects to be faster.
WAVE_MAX_CONFIGURATIONS = 200
#: Cost model of the two paths, measured here (ZB-H2, ZB-V, DualPipe(V) plans of 2,170–12,288 operations on
#: 2–32 devices, 4–200 configurations, CPU time): a wave costs about 4.5 µs plus 12.5 ns per operation and
#: configuration (its gathers); one operation at a time about 0.75 µs per operation whatever the
#: configurations (1.4 µs on DualPipe(V), whose overlapped pairs take more calls).
WAVE_COST_S, WAVE_ELEMENT_COST_S, ROW_OPERATION_COST_S = 4.5e-6, 12.5e-9, 0.75e-6


def runs_waves(operations: int, waves: int, configurations: int) -> bool:
    """Whether executing ``operations`` in ``waves`` for ``configurations`` at once is expected to be faster
    wave by wave than one operation at a time (both give the same numbers): wide waves and few
    configurations."""
    if configurations > WAVE_MAX_CONFIGURATIONS:
        return False
    waves_s = waves * WAVE_COST_S + operations * configurations * WAVE_ELEMENT_COST_S
    return waves_s < operations * ROW_OPERATION_COST_S
_PRODUCT = np.array([0, 1, 2, 1])  # what a pass of kind index F, B, W, BW makes: F 0, B (or BW) 1, W 2


@dataclass(frozen=True)
class Program:
    """A plan compiled for execution. Operations are numbered device by device in each device's order;
    ``kind`` 0–3 = F, B, W, BW of ``stage``, −1 an overlapped pair of forward ``stage`` and backward
    ``pair_stage``. ``waits`` (K, 3): the device's previous operation and the (up to two) operations whose
    outputs it needs (K, the index of a zero row, where there is none); ``across``: whether each is on
    another device (its output then arrives a Send/Recv later); ``levels``: (start, stop) of the waves —
    operations numbered in wave order, each waiting only for earlier waves — which :func:`execute` runs one
    at a time; ``first`` / ``last``: each device's first and last operation."""

    ops: tuple[Op, ...]
    device: np.ndarray
    kind: np.ndarray
    stage: np.ndarray
    pair_stage: np.ndarray
    waits: np.ndarray
    across: np.ndarray
    levels: tuple[tuple[int, int], ...]
    first: np.ndarray
    last: np.ndarray

    @functools.cached_property
    def steps(self) -> list[tuple[int, int, bool, int, bool, int]]:
        """Per operation, as plain ints: (previous operation on the device, K for none; input 1, input 2,
        −1 for none; across 1, across 2; device)."""
        K = len(self.ops)
        w = self.waits
        return list(zip(w[:, 0].tolist(), np.where(w[:, 1] < K, w[:, 1], -1).tolist(), self.across[:, 1].tolist(),
                        np.where(w[:, 2] < K, w[:, 2], -1).tolist(), self.across[:, 2].tolist(),
                        self.device.tolist()))

    @functools.cached_property
    def device_grid(self) -> np.ndarray:
        """(M, devices): column d lists device d's operations in its order, padded with K (no operation)
        to the longest device's M (:func:`~distcalc.schedules.row_runner.device_sums`)."""
        K = len(self.ops)
        counts = np.bincount(self.device)
        order = np.argsort(self.device, kind="stable")  # device by device, each in operation (= its) order
        grid = np.full((int(counts.max()), counts.size), K, dtype=np.int64)
        grid[np.arange(K) - np.repeat(np.cumsum(counts) - counts, counts), self.device[order]] = order
        return grid

    @functools.cached_property
    def duration_layouts(self) -> dict[int, DurationLayout]:
        """:class:`DurationLayout` per number of virtual stages, filled by :func:`_duration_layout`."""
        return {}

    @functools.cached_property
    def row_plan_all_inputs(self) -> RowPlan:
        """:func:`~distcalc.schedules.row_runner.row_plan` with every input."""
        return row_plan(self.waits, self.across, self.device, self.first, self.last)

    @functools.cached_property
    def row_plan_across(self) -> RowPlan:
        """:func:`~distcalc.schedules.row_runner.row_plan` without the inputs made on the operation's own
        device: such an input ended before the device's previous operation did (the device runs its
        operations in order), so with durations ≥ 0 the previous operation's end is the later one and the
        input changes no ready time."""
        return row_plan(self.waits, self.across, self.device, self.first, self.last, own_device_inputs=False)


def _pass_keys(kind: np.ndarray, micro_batch: np.ndarray, stage: np.ndarray, stages: int, micro_batches: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """(key of what each pass makes, key of the output it needs or −1): integer keys (product, micro-batch,
    stage). F of stage j needs F of j − 1; B/BW of j needs B of j + 1 (the last stage's, its own F); W its B."""
    unit = micro_batches * stages
    own = _PRODUCT[kind] * unit + micro_batch * stages + stage
    need = np.where(kind == 0, np.where(stage == 0, -1, own - 1),
                    np.where((kind == 2) | (stage == stages - 1), own - unit, own + 1))
    return own, need


def _levels(count: int, prev: np.ndarray, dep: np.ndarray) -> list[np.ndarray]:
    """Kahn's topological sort, one wave at a time: operations whose waits are all in earlier waves, each
    wave in ascending operation order. The graph has at most three edges per operation and some hundreds of
    waves, so plain lists beat a NumPy round per wave (measured in benchmarks/cold_search.py)."""
    src = np.concatenate([prev, dep[:, 0], dep[:, 1]])
    dst = np.tile(np.arange(count), 3)
    keep = src < count
    src, dst = src[keep], dst[keep]
    order = np.argsort(src, kind="stable")
    successors = dst[order].tolist()
    starts = np.searchsorted(src[order], np.arange(count + 1)).tolist()
    waiting = np.bincount(dst, minlength=count).tolist()
    wave = np.flatnonzero(np.asarray(waiting) == 0).tolist()
    levels = []
    while wave:
        levels.append(np.array(wave, dtype=np.int64))
        ready = []
        for k in wave:
            for nxt in successors[starts[k]:starts[k + 1]]:
                waiting[nxt] -= 1
                if not waiting[nxt]:
                    ready.append(nxt)
        wave = sorted(ready)
    return levels


def compile_plan(plan: Plan) -> Program:
    """Number the plan's operations, find what each waits for and group them into waves that can run
    together (:class:`Program`). :class:`ConfigError` if a pass waits for one the plan never runs, or the
    order deadlocks (a plan bug)."""
    S = plan.virtual_stages
    ops = tuple(op for order in plan.orders for op in order)
    K = len(ops)
    sizes = [len(order) for order in plan.orders]
    if min(sizes) == 0:
        raise ConfigError(f"schedule {plan.name}: a device has no passes")
    device = np.repeat(np.arange(plan.devices), sizes)
    width = np.fromiter((len(op) for op in ops), dtype=np.int64, count=K)
    op_of = np.repeat(np.arange(K), width)
    slot = np.arange(op_of.size) - np.repeat(np.cumsum(width) - width, width)
    flat = np.array([(_KIND_INDEX[ps.kind], ps.micro_batch, ps.stage) for op in ops for ps in op], dtype=np.int64)
    kind, micro_batch, stage = flat.T
    micro_batches = int(micro_batch.max()) + 1
    own, need = _pass_keys(kind, micro_batch, stage, S, micro_batches)
    producer = np.full(3 * micro_batches * S, -1, dtype=np.int64)
    producer[own] = op_of
    waits = need >= 0
    dep_of_pass = np.where(waits, producer[np.where(waits, need, 0)], K)
    if (dep_of_pass < 0).any():
        raise ConfigError(f"schedule {plan.name}: a pass waits for an output the plan never makes (inconsistent order)")
    dep = np.full((K, 2), K, dtype=np.int64)
    dep[op_of, slot] = dep_of_pass
    device_k = np.append(device, -1)
    across = device_k[dep] != device[:, None]
    across &= dep < K
    ends = np.cumsum(sizes)
    first, last = ends - np.asarray(sizes), ends - 1
    prev = np.arange(K) - 1
    prev[first] = K
    levels = _levels(K, prev, dep)
    if sum(level.size for level in levels) != K:
        raise ConfigError(f"schedule {plan.name} deadlocked (inconsistent order)")
    single = width == 1
    first_pass = np.cumsum(width) - width
    second_pass = np.minimum(first_pass + 1, stage.size - 1)
    op_kind = np.where(single, kind[first_pass], -1)
    forward_first = single | (kind[first_pass] == 0)
    f_stage = np.where(forward_first, stage[first_pass], stage[second_pass])
    b_stage = np.where(single, -1, np.where(forward_first, stage[second_pass], stage[first_pass]))
    # renumber in wave order: each wave is a contiguous block, the operations it waits for lie just before it
    order = np.concatenate(levels)
    rank = np.empty(K + 1, dtype=np.int64)
    rank[order] = np.arange(K)
    rank[K] = K
    bounds = np.cumsum([0] + [level.size for level in levels])
    waits = rank[np.column_stack([prev, dep])[order]]
    across = np.column_stack([np.zeros(K, dtype=bool), across])[order]
    return Program(tuple(ops[k] for k in order.tolist()), device[order], op_kind[order], f_stage[order],
                   b_stage[order], waits, across,
                   tuple(zip(bounds[:-1].tolist(), bounds[1:].tolist())), rank[first], rank[last])


def _pair_durations(program: Program, pairs: np.ndarray, stage_arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    """(len(pairs), n) durations of the overlapped pairs ``pairs``: ``F + BW − hidden``."""
    f, b, w, fc, bc = stage_arrays
    jf, jb = program.stage[pairs], program.pair_stage[pairs]
    f_total, b_total = f[jf], b[jb] + w[jb]
    hidden = np.minimum(fc[jf], b_total - bc[jb]) + np.minimum(bc[jb], f_total - fc[jf])
    return f_total + b_total - hidden


def _pass_table(stage_arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    """(4, S, n) time of a pass of kind index F, B, W, BW on each virtual stage."""
    f, b, w = stage_arrays[:3]
    return np.stack([f, b, w, b + w])


def _durations(program: Program, stage_arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    """(operations, n) durations: one pass's time, or a pair's ``F + BW − hidden``."""
    single = program.kind >= 0
    out = _pass_table(stage_arrays)[np.where(single, program.kind, 0), program.stage]
    if not single.all():
        pairs = np.flatnonzero(~single)
        out[pairs] = _pair_durations(program, pairs, stage_arrays)
    return out


@dataclass(frozen=True)
class DurationLayout:
    """Where each operation's duration lives in :func:`_duration_rows`' source, fixed by the program and the
    number of virtual stages: ``index`` (a (kind, stage) row of the pass table, or its pair's distinct (F, B)
    row after it), ``pair_ops`` (the first operation of each distinct pair), ``rows_of`` (views → rows)."""

    index: np.ndarray
    pair_ops: np.ndarray
    rows_of: Callable[[list[np.ndarray]], Any]


def _duration_layout(program: Program, stages: int) -> DurationLayout:
    layouts = program.duration_layouts
    if stages not in layouts:
        index = np.where(program.kind < 0, 3, program.kind) * stages + program.stage
        pairs = np.flatnonzero(program.kind < 0)
        pair_ops = pairs[:0]
        if pairs.size:  # a pair's time depends only on its two stages: one row per distinct (F, B) stages
            _, first, inverse = np.unique(program.stage[pairs] * stages + program.pair_stage[pairs],
                                          return_index=True, return_inverse=True)
            index[pairs] = 4 * stages + inverse.reshape(-1)
            pair_ops = pairs[first]
        index.flags.writeable = False
        picks = index.tolist()
        rows_of = operator.itemgetter(*picks) if len(picks) > 1 else (lambda views: [views[i] for i in picks])
        layouts[stages] = DurationLayout(index, pair_ops, rows_of)
    return layouts[stages]


def _duration_rows(program: Program, stage_arrays: tuple[np.ndarray, ...]
                   ) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, bool]:
    """The same durations as :func:`_durations`, one (n,) row per operation: a view of the pass table where
    the operation is one pass (nothing gathered), a computed row where it is an overlapped pair; the rows
    they view (``source``: the pass table's (kind, stage) rows, the distinct pairs' rows, a row of zeros
    last) and each operation's row number in it (:class:`DurationLayout`); and whether every duration is
    ≥ 0 (not NaN)."""
    table = _pass_table(stage_arrays)
    stages, n = table.shape[1], table.shape[2]
    layout = _duration_layout(program, stages)
    nonnegative = bool((table >= 0).all())
    parts = [table.reshape(-1, n)]
    if layout.pair_ops.size:
        distinct = _pair_durations(program, layout.pair_ops, stage_arrays)
        nonnegative = nonnegative and bool((distinct >= 0).all())
        parts.append(distinct)
    source = np.concatenate(parts + [np.zeros((1, n))])
    return layout.rows_of(list(source)), source, layout.index, nonnegative


def execute(plan: Plan, times: PassTimes, keep_events: bool = False, program: Program | None = None,
            busy: bool = True) -> Execution:
    """Run ``plan`` with ``times`` (``program``: :func:`compile_plan` of it, when the caller caches one): each
    operation starts when its device's previous one has ended and its inputs are there (``p2p_s`` later
    when made on another device); one wave of :class:`Program` ``levels`` at a time, all configurations at
    once. ``busy`` False: the devices' busy times are not summed (``busy_s`` None) where the operations run
    one at a time — a caller that needs only the step time (the search) skips that pass over every duration."""
    program = compile_plan(plan) if program is None else program
    *stage_arrays, p2p = times.arrays(plan.virtual_stages)
    if not keep_events and not runs_waves(program.kind.shape[0], len(program.levels), p2p.shape[0]):
        rows, source, index, nonnegative = _duration_rows(program, tuple(stage_arrays))
        rows_of = program.row_plan_across if nonnegative else program.row_plan_all_inputs
        first_end, last_end = run_rows(rows_of, rows, p2p)
        # each device's durations added in its operation order (K: the row of zeros after the last one)
        busy_s = device_sums(source, np.append(index, source.shape[0] - 1)[program.device_grid]) if busy else None
        first = first_end - np.stack([rows[k] for k in program.first.tolist()])
        return Execution(plan, first, last_end, busy_s)
    K = program.kind.shape[0]
    ends = np.zeros((K + 1, p2p.shape[0]))  # row K: "nothing to wait for"
    waits, across, sends = program.waits, program.across, bool(p2p.any())
    durations = _durations(program, tuple(stage_arrays))
    for lo, hi in program.levels:
        w = waits[lo:hi]
        if sends:  # an input from another device arrives a Send/Recv later
            a = across[lo:hi]
            ready = np.maximum(ends[w[:, 0]], ends[w[:, 1]] + a[:, 1, None] * p2p)
            np.maximum(ready, ends[w[:, 2]] + a[:, 2, None] * p2p, out=ready)
        else:
            ready = np.maximum(ends[w[:, 0]], ends[w[:, 1]])
            np.maximum(ready, ends[w[:, 2]], out=ready)
        np.add(ready, durations[lo:hi], out=ends[lo:hi])
    return _execution(plan, program, durations, ends[:K], keep_events)


def _execution(plan: Plan, program: Program, durations: np.ndarray, ends: np.ndarray, keep_events: bool
               ) -> Execution:
    """``durations``: per operation, (operations, n)."""
    busy = np.zeros((plan.devices, ends.shape[1]))
    np.add.at(busy, program.device, durations)
    first = ends[program.first] - np.stack([durations[k] for k in program.first.tolist()])
    events = ([(int(d), op, ends[k] - durations[k], ends[k]) for k, (d, op) in enumerate(zip(program.device, program.ops))]
              if keep_events else [])
    return Execution(plan, first, ends[program.last], busy, events)


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
