"""ZB-V (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", arXiv:2401.10241 v2 §6): each device holds two
chunks in a V — virtual stage j on device j for j < p, on device 2p − 1 − j after — so a micro-batch's
forward goes down the devices and back up, its loss is on device 0, and its backward goes down and back up
again. The backward is split into B and W.

The order follows the heuristic of the sail-sg reference scheduler (``zerobubble/scheduler/zbv.py``,
re-expressed here), run once per (p, m) at equal pass times (T_F = T_B = T_W, the paper's setting) with
activation memory counted as the scheduler does — a chunk's forward adds one unit, its W frees it — and
capped at 2p units (1F1B's p micro-batches):

1. warm-up: one chunk-0 forward on every device, then, from the last device back, as many more chunk-0
   forwards on devices 0…i as fit before device i's first chunk-1 forward arrives (keeping room for
   2 + 2i more), then that chunk-1 forward; then the forwards are balanced down the V;
2. 2m rounds: every device runs one backward (the leg whose input is there, the second leg first), then one
   forward (chunk 1 when its input is there); before each, pending W's fill the wait for the input (every W
   that ends before it arrives, and one more when the wait would exceed the worst device's bubble so far),
   and W's are forced when the memory cap would be passed;
3. the W's left close the step.

Executed at equal times this gives a zero bubble once the steps tile (post-validation, §4) and a peak of p
micro-batches on every device (the Zero Bubble authors' comparison table, sail Hugging Face space
``description2.md``: ZB-V bubble 0, activation memory 1×, pipeline communication 2×). The executor then
replays the order with the configuration's real times (at chunk F, B, W = 0.6, 0.5, 0.4 the bubble is
(p − 1)·0.4 for every m).
"""

from __future__ import annotations

from collections import deque
from functools import lru_cache

from distcalc.modes import Schedule
from distcalc.schedules.base import Op, PassKind, PipelineSchedule
from distcalc.schedules.classic import one

F, B, W = PassKind.F, PassKind.B, PassKind.W
#: Index of a pass kind in the per-device counters (forward / backward / weight legs 0 and 1 each).
_SLOT = {F: 0, B: 2, W: 4}


class _VBuilder:
    """Places passes on a unit-time model of the devices. A pass is (kind, leg, device, micro-batch): for F
    leg 0 is the way down (virtual stage = device), leg 1 the way up; for B and W leg 0 is the first
    backward leg (the way up of the forward, virtual stage 2p − 1 − device), leg 1 the second."""

    def __init__(self, devices: int, micro_batches: int):
        self.p, self.m = devices, micro_batches
        self.end: dict[tuple[PassKind, int, int, int], float] = {}
        self.count = [[0] * 6 for _ in range(devices)]
        self.clock = [0.0] * devices
        self.held = [0] * devices
        self.bubble = [0.0] * devices
        self.worst = 0.0  # the largest bubble so far
        self.pending: list[deque[int]] = [deque() for _ in range(devices)]
        self.orders: list[list[Op]] = [[] for _ in range(devices)]

    def input_of(self, kind: PassKind, leg: int, device: int) -> tuple[PassKind, int, int, int] | None:
        """The pass on the neighbouring device this one waits for (None: none, or a W)."""
        micro_batch = self.count[device][_SLOT[kind] + leg]
        if kind is W:
            return None
        if leg == 1 and device < self.p - 1:
            return (kind, 1, device + 1, micro_batch)
        if leg == 0 and device > 0:
            return (kind, 0, device - 1, micro_batch)
        return None

    def ready(self, kind: PassKind, leg: int, device: int) -> bool:
        source = self.input_of(kind, leg, device)
        return source is None or source in self.end

    def place(self, kind: PassKind, leg: int, device: int) -> None:
        micro_batch = self.count[device][_SLOT[kind] + leg]
        earliest = self.clock[device] + 1.0
        finish = earliest
        source = self.input_of(kind, leg, device)
        if source is not None:
            finish = max(finish, self.end[source] + 1.0)
        if self.count[device][0]:
            self.bubble[device] += finish - earliest
            self.worst = max(self.worst, self.bubble[device])
        self.end[(kind, leg, device, micro_batch)] = finish
        self.clock[device] = finish
        self.count[device][_SLOT[kind] + leg] += 1
        self.held[device] += 1 if kind is F else -1 if kind is W else 0
        if kind is B:
            self.pending[device].append(leg)
        forward_leg = leg if kind is F else 1 - leg
        stage = device if forward_leg == 0 else 2 * self.p - 1 - device
        self.orders[device].append(one(kind, micro_batch, stage, forward_leg))

    def weight(self, device: int) -> None:
        self.place(W, self.pending[device].popleft(), device)

    def fill_before(self, kind: PassKind, leg: int, device: int) -> None:
        """Pending W's into the wait for this pass's input (all that end before it comes; one more when the
        wait would exceed the worst bubble so far)."""
        source = self.input_of(kind, leg, device)
        if source is None:
            return
        while self.pending[device] and self.end[source] >= self.clock[device] + 1.0:
            self.weight(device)
        if self.pending[device] and self.end[source] - self.clock[device] > self.worst - self.bubble[device]:
            self.weight(device)

    def run(self) -> tuple[tuple[Op, ...], ...]:
        p, m, count = self.p, self.m, self.count
        cap = 2 * p
        for i in range(p):
            self.place(F, 0, i)
        for i in range(p - 1, -1, -1):
            if i < p - 1:
                due = self.end[(F, 1, i + 1, 0)]
                while self.held[i] + 2 + 2 * i <= cap and self.clock[i] + 1.0 <= due and count[i][0] < m:
                    for j in range(i + 1):
                        self.place(F, 0, j)
            self.place(F, 1, i)
        leg = 0
        for i in range(1, p):
            while count[i][0] + count[i][1] < count[i - 1][0] + count[i - 1][1] or count[i][1] <= count[i - 1][1] < m:
                for j in range(p - 1, i - 1, -1):
                    if count[j][leg] < m:
                        self.place(F, leg, j)
                leg = 1 - leg
        for _ in range(2 * m):
            self._backward_round()
            self._forward_round()
        for i in range(p):
            while self.pending[i]:
                self.weight(i)
        return tuple(tuple(o) for o in self.orders)

    def _backward_round(self) -> None:
        p, m, count = self.p, self.m, self.count
        second, first = [], []
        for i in range(p):
            if count[i][3] >= count[i][2]:
                first.append(i)
            elif i == p - 1 or self.ready(B, 1, i) or count[i][2] >= m:
                second.append(i)
            else:
                first.append(i)
        for i, leg in [(i, 1) for i in reversed(second)] + [(i, 0) for i in first]:
            if count[i][2 + leg] < m:
                self.fill_before(B, leg, i)
                self.place(B, leg, i)

    def _forward_round(self) -> None:
        p, m, count = self.p, self.m, self.count
        for i in range(p):
            if count[i][1] >= m:
                continue
            if count[i][1] >= count[i][0]:
                leg = 0
            elif i == p - 1 or self.ready(F, 1, i):
                leg = 1
            elif count[i][0] < m and self.ready(F, 0, i):
                leg = 0
            else:
                continue
            while self.held[i] + 1 > 2 * p:
                self.weight(i)
            self.fill_before(F, leg, i)
            self.place(F, leg, i)


@lru_cache(maxsize=256)
def v_shape_orders(devices: int, micro_batches: int) -> tuple[tuple[Op, ...], ...]:
    """Per-device ZB-V order (see the module docstring)."""
    return _VBuilder(devices, micro_batches).run()


class ZeroBubbleV(PipelineSchedule):
    """ZB-V: two chunks per device in a V, B/W split; 1F1B memory, zero bubble at equal pass times."""

    schedule = Schedule.ZB_V
    description = "ZB-V: V-shaped two chunks per device, B/W split; 1F1B memory, ~0 bubble"
    reference = "Qi et al. 2024 arXiv:2401.10241 v2 §6"
    split_backward = True
    tiles_iterations = True
    v_shape = True

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:
        return v_shape_orders(devices, micro_batches)

    def closed_form_bubble_s(self, devices, micro_batches, t_f, t_b, t_w):
        """Zero at T_F = T_B = T_W (the published case); None otherwise."""
        return 0.0 if t_f == t_b == t_w and micro_batches >= 2 * devices else None

    def closed_form_peak_in_flight(self, devices):
        return float(devices)
