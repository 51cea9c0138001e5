"""The handcrafted Zero Bubble schedules ZB-H1 and ZB-H2 (Qi et al. 2024, "Zero Bubble Pipeline
Parallelism", ICLR, §2 and Fig. 3; arXiv:2401.10241).

The backward is split into B (input gradient, on the critical path) and W (weight gradient, any time after
its B). Stage s (0-based, p stages, m micro-batches) runs ``warm-up`` forwards, then for each micro-batch k:
B_k, possibly a W, then the next F; the remaining W's close the step.

* ZB-H1: warm-up ``p − s`` forwards (1F1B's in-flight count), W of micro-batch k − s right after B_k (stage s
  defers its W's by s micro-batches — "the starting points of W depend on the number of warm-up
  micro-batches", §2.1). Bubble ``(p − 1)(T_F + T_B − T_W)`` (Table 2), a third of 1F1B's when the three are
  equal; peak in-flight p (same as 1F1B's stage 0; every stage holds p until its W's).
* ZB-H2: warm-up ``2(p − s) − 1`` forwards (the extra forwards fill the start, Fig. 3 bottom), W of
  micro-batch k − 2s right after B_k: stage s's last 2s + 1 W's close the step, so with optimizer
  post-validation (§4) the steps tile as a parallelogram and the bubble is ``(p − 1)(T_F + T_B − 2·T_W)`` —
  zero when the three are equal; every stage holds at most ``2p − 1`` micro-batches' activations until their
  W (Table 2's peak, on stage 0 even counted until B). Deferring every W to the end instead (the reference
  scheduler's ``fff…bfbf…bwbw…www`` manual order) has the same bubble but keeps up to m weight-gradient
  inputs alive.

* ZB-2p (the paper's automatic schedule under the memory limit 2p·M_B, §3.1 and Table 3's memory column):
  its heuristic warms up "as many F passes as possible within the memory limit", so stage s runs ``2(p − s)``
  warm-up forwards (one more than ZB-H2) and, holding 2s micro-batches until their W, reaches the limit, 2p,
  on every stage. With the same pass times on every stage the extra forward leaves ZB-H2's step unchanged
  (property test); with unequal stages it can move it slightly (the Table 4 1.5B rows: +0.06 %). The memory
  is the paper's.

Both closed forms hold exactly for the executed order when ``T_W ≤ min(T_F, T_B)`` and m ≥ 2p (tests).
"""

from __future__ import annotations

from distcalc.modes import Schedule
from distcalc.schedules.base import Op, PassKind, PipelineSchedule
from distcalc.schedules.classic import one

F, B, W = PassKind.F, PassKind.B, PassKind.W


def zero_bubble_order(stage: int, micro_batches: int, warm_up: int, w_delay: int | None) -> tuple[Op, ...]:
    """One stage's order: ``warm_up`` forwards, then B_k [W] F per micro-batch; with ``w_delay`` d the W of
    micro-batch k − d follows B_k, with None the W's wait until the forwards are done; the W's left over
    close the step."""
    m = micro_batches
    nxt = min(warm_up, m)
    order = [one(F, k, stage) for k in range(nxt)]
    w = 0
    for k in range(m):
        order.append(one(B, k, stage))
        if (k >= w_delay) if w_delay is not None else nxt >= m:
            order.append(one(W, w, stage))
            w += 1
        if nxt < m:
            order.append(one(F, nxt, stage))
            nxt += 1
    order += [one(W, k, stage) for k in range(w, m)]
    return tuple(order)


class ZeroBubbleH1(PipelineSchedule):
    """ZB-H1: 1F1B's memory, a third of its bubble (``zb-h1``: analyze executes the plan)."""

    schedule = Schedule.ZB_H1
    description = "ZB-H1: B/W split, W deferred to fill the drain; 1F1B memory"
    reference = "Qi et al. 2024 §2.1, Table 2"
    split_backward = True

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:
        return tuple(zero_bubble_order(s, micro_batches, devices - s, s) for s in range(devices))

    def closed_form_bubble_s(self, devices, micro_batches, t_f, t_b, t_w):
        return (devices - 1) * (t_f + t_b - t_w)

    def closed_form_peak_in_flight(self, devices):
        return float(devices)


class ZeroBubbleClosedForm(ZeroBubbleH1):
    """``zero-bubble``: the same ZB-H1 plan, but analyze and memory price it by the closed form
    (:func:`distcalc.pipeline.pipeline_time_s`; ``min(p, m)`` in flight on every stage), as distcalc did
    before the schedules were executed."""

    schedule = Schedule.ZERO_BUBBLE


class ZeroBubbleH2(PipelineSchedule):
    """ZB-H2 (the paper's ZB-2p family): extra warm-up forwards fill the start, W's fill the end."""

    schedule = Schedule.ZB_H2
    description = "ZB-H2 / ZB-2p: 2p-1 warm-up forwards, zero bubble with post-validation; 2p-1 memory"
    reference = "Qi et al. 2024 §2.2, §4, Table 2"
    split_backward = True
    tiles_iterations = True

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:
        return tuple(zero_bubble_order(s, micro_batches, 2 * (devices - s) - 1, 2 * s) for s in range(devices))

    def closed_form_bubble_s(self, devices, micro_batches, t_f, t_b, t_w):
        return (devices - 1) * (t_f + t_b - 2 * t_w)

    def closed_form_peak_in_flight(self, devices):
        return float(2 * devices - 1)


class ZeroBubble2p(ZeroBubbleH2):
    """ZB-2p: ZB-H2's order with the warm-up filled to the paper's memory limit 2p·M_B."""

    schedule = Schedule.ZB_2P
    description = "ZB-2p: 2(p-s) warm-up forwards up to the 2p memory limit; ZB-H2's bubble, 2p memory"
    reference = "Qi et al. 2024 §3.1, §4, Table 3"

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:
        return tuple(zero_bubble_order(s, micro_batches, 2 * (devices - s), 2 * s) for s in range(devices))

    def closed_form_peak_in_flight(self, devices):
        return float(2 * devices)
