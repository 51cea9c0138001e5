"""DualPipeV (deepseek-ai/DualPipe ``dualpipe/dualpipev.py``; Sea AI Lab's "cut-in-half" of DualPipe): the
V-shaped half of DualPipe. p devices hold 2p virtual stages — device r holds stage r and stage 2p − 1 − r
(one copy of the parameters, each chunk half a 1F1B stage) — and every micro-batch enters at device 0 and
leaves there. Each device runs DualPipe's eight runs with h = r, H = p, M = m ("near" = chunk 0, "far" =
chunk 1; the last device runs the first overlapped pair apart).

Published (repository README table, with PP = 2p stages on PP/2 devices): bubble
``(PP/2 − 1)(F&B + B − 3W)`` = ``(p − 1)(F&B + B − 3W)`` in chunk times (B the full backward), activations
PP + 1 chunks = p + 1/2 stage units.
"""

from __future__ import annotations

from distcalc.modes import Schedule
from distcalc.schedules.base import Op, PipelineSchedule
from distcalc.schedules.dualpipe import DualPipe, dual_order


class DualPipeV(PipelineSchedule):
    """DualPipeV: V-shaped two chunks per device with DualPipe's overlapped F&B pairs."""

    schedule = Schedule.DUALPIPEV
    description = "DualPipeV: V-shaped cut-in-half DualPipe, overlapped forward/backward pairs"
    reference = "deepseek-ai/DualPipe README (DualPipeV)"
    split_backward = True
    dual_pipe = True
    v_shape = True

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:
        n = devices
        return tuple(dual_order(r, n, micro_batches, r == n - 1,
                                lambda phase, k, r=r: (k, r if phase == 0 else 2 * n - 1 - r, phase))
                     for r in range(n))

    def closed_form_bubble_s(self, devices, micro_batches, t_f, t_b, t_w, t_fb=None):
        """``(p − 1)(F&B + B − 3W)`` with chunk times (DualPipe's formula with PP = 2p)."""
        return DualPipe().closed_form_bubble_s(2 * devices, micro_batches, t_f, t_b, t_w, t_fb)

    def closed_form_peak_in_flight(self, devices):
        return devices + 0.5
