"""GPipe, 1F1B and interleaved 1F1B: the schedules that run the backward as one pass (BW).

* GPipe (Huang et al. 2019): every forward, then every backward.
* 1F1B / PipeDream-Flush (Narayanan et al. 2021 §2.2.1; Megatron-LM
  ``forward_backward_pipelining_without_interleaving``): stage s runs p − s − 1 warm-up forwards, then
  alternates one forward and one backward, then drains. Bubble ``(p − 1)(T_F + T_B + T_W)`` (Qi et al. 2024
  Table 2; DeepSeek-V3 report Table: ``(PP − 1)(F + B)`` with B the full backward); peak in-flight p (stage 0).
* Interleaved 1F1B (Narayanan et al. 2021 §2.2.2; Megatron-LM
  ``forward_backward_pipelining_with_interleaving``): v chunks per device, stage s warms up
  ``2(p − s − 1) + (v − 1)·p`` chunk forwards; bubble ``(p − 1)(T_F + T_B + T_W)/v``; m a multiple of p.
"""

from __future__ import annotations

from distcalc.errors import ConfigError
from distcalc.modes import Schedule
from distcalc.schedules.base import Op, Pass, PassKind, PipelineSchedule

F, BW = PassKind.F, PassKind.BW


def one(kind: PassKind, micro_batch: int, stage: int, chunk: int = 0) -> Op:
    """An operation of one pass."""
    return (Pass(kind, micro_batch, stage, chunk),)


class GPipe(PipelineSchedule):
    """All forwards, then all backwards (activations of all m micro-batches held)."""

    schedule = Schedule.GPIPE
    description = "GPipe: all forwards, then all backwards"
    reference = "Huang et al. 2019, GPipe"

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:
        return tuple(tuple(one(F, i, s) for i in range(micro_batches)) +
                     tuple(one(BW, i, s) for i in range(micro_batches)) for s in range(devices))

    def closed_form_bubble_s(self, devices, micro_batches, t_f, t_b, t_w):
        return (devices - 1) * (t_f + t_b + t_w)


def one_f_one_b_order(devices: int, stage: int, micro_batches: int) -> tuple[Op, ...]:
    """Stage ``stage``'s 1F1B order (warm-up, steady one-forward-one-backward, drain)."""
    warm = min(devices - stage - 1, micro_batches)
    order = [one(F, i, stage) for i in range(warm)]
    for i in range(micro_batches - warm):
        order += [one(F, warm + i, stage), one(BW, i, stage)]
    order += [one(BW, i, stage) for i in range(micro_batches - warm, micro_batches)]
    return tuple(order)


class OneFOneB(PipelineSchedule):
    """PipeDream-Flush 1F1B."""

    schedule = Schedule.ONE_F_ONE_B
    description = "1F1B (PipeDream-Flush): warm-up, one forward one backward, drain"
    reference = "Narayanan et al. 2021 §2.2.1"

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:
        return tuple(one_f_one_b_order(devices, s, micro_batches) for s in range(devices))

    def closed_form_bubble_s(self, devices, micro_batches, t_f, t_b, t_w):
        return (devices - 1) * (t_f + t_b + t_w)

    def closed_form_peak_in_flight(self, devices):
        return float(devices)


class Interleaved(PipelineSchedule):
    """Megatron-LM interleaved 1F1B over v chunks per device (virtual stage j on device j mod p)."""

    schedule = Schedule.INTERLEAVED
    description = "interleaved 1F1B: v model chunks per device"
    reference = "Narayanan et al. 2021 §2.2.2"

    def check(self, devices: int, micro_batches: int, vpp: int = 1) -> None:
        super().check(devices, micro_batches)
        if vpp < 2 or micro_batches % devices:
            raise ConfigError(f"interleaved schedule needs vpp >= 2 (got {vpp}) and micro-batches({micro_batches})"
                              f" a multiple of pp({devices})")

    def chunks(self, vpp: int) -> int:
        return vpp

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:
        p, v, total = devices, vpp, micro_batches * vpp

        def fwd(k: int, s: int) -> Op:
            chunk = (k // p) % v
            return one(F, (k // (p * v)) * p + k % p, chunk * p + s, chunk)

        def bwd(k: int, s: int) -> Op:
            chunk = v - 1 - (k // p) % v
            return one(BW, (k // (p * v)) * p + k % p, chunk * p + s, chunk)

        orders = []
        for s in range(p):
            warm = min((p - s - 1) * 2 + (v - 1) * p, total)
            order = [fwd(k, s) for k in range(warm)]
            for i in range(total - warm):
                order += [fwd(warm + i, s), bwd(i, s)]
            order += [bwd(k, s) for k in range(total - warm, total)]
            orders.append(tuple(order))
        return tuple(orders)

    def closed_form_bubble_s(self, devices, micro_batches, t_f, t_b, t_w):
        """Per-chunk times: the device's bubble is (p − 1) chunk slots, ``(p−1)(T_F+T_B+T_W)/v`` per stage."""
        return (devices - 1) * (t_f + t_b + t_w)
