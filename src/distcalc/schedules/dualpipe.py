"""DualPipe (DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", arXiv:2412.19437, §3.2.1 and Fig. 5;
deepseek-ai/DualPipe ``dualpipe/dualpipe.py``): bidirectional. Device r holds stage r of the forward
direction and stage PP − 1 − r of the reverse direction (two copies of the parameters' shares); half the
micro-batches enter at device 0, half at device PP − 1. A forward chunk of one direction and a backward
chunk of the other run as one overlapped operation (F&B), hiding each other's communication.

Each device's order is eight runs (the repository's ``step``; h = min(r, PP − 1 − r) the distance to the
nearer end, H = PP/2, M = m/2 micro-batches per direction; "near" = the direction that enters at this
device's end, "far" the other):

1. 2(H − h − 1) near forwards; 2. h + 1 × (near F, far F); 3. H − h − 1 × (far B, W, far F) with B/W split;
4. M − PP + h + 1 × (near F & far B, far F & near B) overlapped (the middle devices run the first pair
   apart); 5. H − h − 1 × (far B, far F & near B); 6. h + 1 × (far B, near B), the second half with B/W
   split; 7. H − h − 1 × (W, near B split); 8. h + 1 × W.

Published (repository README table, "based on the same number of PP stages"): bubble
``(PP/2 − 1)(F&B + B − 3W)`` with B the full backward, parameters 2×, activations PP + 1 (in stage units).
"""

from __future__ import annotations

from typing import Callable

from distcalc.modes import Schedule
from distcalc.schedules.base import Op, Pass, PassKind, PipelineSchedule

F, B, W, BW = PassKind.F, PassKind.B, PassKind.W, PassKind.BW


def dual_order(h: int, half: int, per_direction: int, middle: bool,
               locate: Callable[[int, int], tuple[int, int, int]]) -> tuple[Op, ...]:
    """One device's DualPipe order. ``locate(phase, k)`` → (micro-batch id, virtual stage, chunk) of this
    device's k-th micro-batch of phase 0 (near) or 1 (far)."""
    counters = {("F", 0): 0, ("F", 1): 0, ("B", 0): 0, ("B", 1): 0}
    weights: list[Pass] = []

    def take(kind: PassKind, phase: int, split: bool = False) -> Pass:
        slot = ("F" if kind is F else "B", phase)
        micro_batch, stage, chunk = locate(phase, counters[slot])
        counters[slot] += 1
        if kind is F:
            return Pass(F, micro_batch, stage, chunk)
        if split:
            weights.append(Pass(W, micro_batch, stage, chunk))
            return Pass(B, micro_batch, stage, chunk)
        return Pass(BW, micro_batch, stage, chunk)

    order: list[Op] = []
    solo = lambda kind, phase, split=False: order.append((take(kind, phase, split),))  # noqa: E731
    pair = lambda f_phase, b_phase: order.append((take(F, f_phase), take(BW, b_phase)))  # noqa: E731
    weight = lambda: order.append((weights.pop(0),))  # noqa: E731
    far_lead = half - h - 1
    for _ in range(2 * far_lead):
        solo(F, 0)
    for _ in range(h + 1):
        solo(F, 0)
        solo(F, 1)
    for _ in range(far_lead):
        solo(B, 1, True)
        weight()
        solo(F, 1)
    for i in range(per_direction - 2 * half + h + 1):
        if i == 0 and middle:
            solo(F, 0)
            solo(B, 1)
        else:
            pair(0, 1)
        pair(1, 0)
    for _ in range(far_lead):
        solo(B, 1)
        pair(1, 0)
    split = False
    for i in range(h + 1):
        if i == (h + 1) // 2 and h % 2 == 1:
            split = True
        solo(B, 1, split)
        if i == (h + 1) // 2 and h % 2 == 0:
            split = True
        solo(B, 0, split)
    for _ in range(far_lead):
        weight()
        solo(B, 0, True)
    for _ in range(h + 1):
        weight()
    return tuple(order)


class DualPipe(PipelineSchedule):
    """DualPipe on PP devices: two directions, overlapped F&B pairs, 2× parameters."""

    schedule = Schedule.DUALPIPE
    description = "DualPipe: bidirectional, overlapped forward/backward pairs; 2x parameters"
    reference = "DeepSeek-V3 report §3.2.1; deepseek-ai/DualPipe"
    split_backward = True
    dual_pipe = True
    parameter_copies = 2

    def chunks(self, vpp: int) -> int:
        """Virtual stages per micro-batch path: PP (each device holds one stage of each direction)."""
        return 1

    def device_map(self, devices: int, micro_batches: int) -> Callable[[int, int], int]:
        per = micro_batches // 2
        return lambda micro_batch, stage: stage if micro_batch < per else devices - 1 - stage

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:
        n, half, per = devices, devices // 2, micro_batches // 2
        orders = []
        for r in range(n):
            near = 0 if r < half else 1  # the direction entering at this device's end

            def locate(phase: int, k: int, r: int = r, near: int = near) -> tuple[int, int, int]:
                direction = near if phase == 0 else 1 - near
                return k + direction * per, r if direction == 0 else n - 1 - r, direction

            h = min(r, n - 1 - r)
            orders.append(dual_order(h, half, per, h == half - 1, locate))
        return tuple(orders)

    def closed_form_bubble_s(self, devices, micro_batches, t_f, t_b, t_w, t_fb=None):
        """``(PP/2 − 1)(F&B + B − 3W)``, B the full backward ``t_b + t_w``; F&B = F + B without overlap."""
        full = t_b + t_w
        fb = t_f + full if t_fb is None else t_fb
        return (devices / 2 - 1) * (fb + full - 3 * t_w)

    def closed_form_peak_in_flight(self, devices):
        return float(devices + 1)
