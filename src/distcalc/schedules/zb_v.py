"""ZB-V (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", arXiv:2401.10241 v2 §6; the sail-sg
reference implementation ``zerobubble/scheduler/zbv.py``): each device holds two chunks in a V — virtual
stage j on device j for j < p, on device 2p − 1 − j after — so a micro-batch's forward goes down the devices
and back up, and its loss is on device 0. The backward is split into B and W.

The order is built once per (p, m) by list scheduling at equal pass times (T_F = T_B = T_W, the condition of
the paper's handcrafted ZB-V): whenever a device is free it runs a ready B (the later virtual stage first),
else a ready F if it holds fewer than 2p chunk activations (1F1B's p micro-batches), else a pending W
(the oldest), else waits. Executed at equal times this gives a zero bubble once the steps tile
(post-validation, §4) with 1F1B's peak activation memory (the Zero Bubble authors' comparison table, sail
Hugging Face space ``description2.md``: ZB-V bubble 0, activation memory 1×, pipeline communication 2×).
The executor then replays the order with the configuration's real times.

Known gap: this order runs W only when a device has nothing else ready, so many W's wait for the end; the
in-flight count (activations until B, the papers' M_B convention) does not count the weight-gradient
inputs those pending W's keep (M_W ≈ M_B without FlashAttention, Qi et al. Table 1). The reference ZB-V
scheduler places W's to keep that memory within 2p chunks and builds its order from the profiled pass
times; this order is built at equal times, so with unequal F/B/W its steady state idles a little every few
micro-batches (chunk passes F, B, W = 0.6, 0.5, 0.4, p = 4: bubble 1.5, 2.1, 3.3 for m = 8, 16, 32, against
a busy time of 12, 24, 48).
"""

from __future__ import annotations

from collections import deque
from functools import lru_cache

from distcalc.errors import ConfigError
from distcalc.parallel import SCHEDULE_ZB_V
from distcalc.schedules.base import Op, PassKind, PipelineSchedule, v_device
from distcalc.schedules.classic import one

F, B, W = PassKind.F, PassKind.B, PassKind.W


def _ready(done: dict, key, now: float, waits: list[float]) -> bool:
    end = done.get(key)
    if end is not None and end > now:
        waits.append(end)
    return end is not None and end <= now


@lru_cache(maxsize=256)
def v_shape_orders(devices: int, micro_batches: int) -> tuple[tuple[Op, ...], ...]:
    """Per-device ZB-V order (see the module docstring)."""
    p, m, S = devices, micro_batches, 2 * devices
    device = v_device(p)
    stages_of = [sorted((j for j in range(S) if device(0, j) == d), reverse=True) for d in range(p)]
    clock = [0.0] * p
    next_f, next_b = [0] * S, [0] * S
    done_f: dict[tuple[int, int], float] = {}
    done_b: dict[tuple[int, int], float] = {}
    held = [0] * p
    pending = [deque() for _ in range(p)]
    orders: list[list[Op]] = [[] for _ in range(p)]
    left = 3 * m * S
    remaining = [6 * m] * p  # passes each device has still to place (two chunks × F, B, W)
    blocked: set[int] = set()  # devices waiting on a pass no device has scheduled yet
    while left:
        busy = [x for x in range(p) if remaining[x] and x not in blocked]
        if not busy:
            raise ConfigError(f"zb-v order construction stalled (p={p}, m={m})")
        d = min(busy, key=lambda x: (clock[x], x))
        now, waits, choice = clock[d], [], None
        for j in stages_of[d]:
            mb = next_b[j]
            if mb < next_f[j] and _ready(done_f if j == S - 1 else done_b, (mb, j if j == S - 1 else j + 1),
                                         now, waits):
                choice = (B, mb, j)
                break
        if choice is None and held[d] < 2 * p:
            for j in stages_of[d]:
                mb = next_f[j]
                if mb < m and (j == 0 or _ready(done_f, (mb, j - 1), now, waits)):
                    choice = (F, mb, j)
                    break
        if choice is None and pending[d]:
            choice = (W, *pending[d].popleft())
        if choice is None:
            later = [t for t in waits + clock if t > now]
            if later:
                clock[d] = min(later)
            else:
                blocked.add(d)
            continue
        kind, mb, j = choice
        end = now + 1.0
        if kind is F:
            done_f[(mb, j)], next_f[j], held[d] = end, next_f[j] + 1, held[d] + 1
        elif kind is B:
            done_b[(mb, j)], next_b[j], held[d] = end, next_b[j] + 1, held[d] - 1
            pending[d].append((mb, j))
        orders[d].append(one(kind, mb, j, 0 if j < p else 1))
        clock[d] = end
        left -= 1
        remaining[d] -= 1
        blocked.clear()
    return tuple(tuple(o) for o in orders)


class ZeroBubbleV(PipelineSchedule):
    """ZB-V: two chunks per device in a V, B/W split; 1F1B memory, zero bubble at equal pass times."""

    name, code = "zb-v", SCHEDULE_ZB_V
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
