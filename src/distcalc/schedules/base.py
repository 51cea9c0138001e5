"""What every pipeline schedule is made of: passes, operations, a plan (the per-device order), the schedule
object's interface.

A *pass* is one unit of work of one micro-batch on one virtual stage (model chunk): ``F`` forward, ``B``
input gradient, ``W`` weight gradient (Qi et al. 2024, "Zero Bubble Pipeline Parallelism", ICLR, §2: the
backward split into B and W), or ``BW`` a full backward (B and W together, as 1F1B runs it). An *operation*
is what a device runs at once: one pass, or two passes that overlap (DualPipe's forward-and-backward pair,
DeepSeek-AI 2024, "DeepSeek-V3 Technical Report", §3.2.1). A :class:`Plan` lists each device's operations
in order; :mod:`distcalc.schedules.execute` runs it with real per-pass times.

Virtual stages ``0 … S−1`` are the model chunks in the order a micro-batch's forward visits them;
``Plan.device_of`` says which device holds virtual stage j for each micro-batch (bidirectional DualPipe
sends half the micro-batches the other way, so the map depends on the micro-batch).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable, NamedTuple

from distcalc.errors import ConfigError
from distcalc.modes import Schedule, schedule_shape_problem


class PassKind(str, Enum):
    """F forward, B input gradient, W weight gradient, BW full backward (B + W in one pass)."""

    F = "F"
    B = "B"
    W = "W"
    BW = "BW"


class Pass(NamedTuple):
    """One pass: ``kind`` of micro-batch ``micro_batch`` on virtual stage ``stage``; ``chunk`` is the
    device-local chunk index (0 or 1 on V-shaped and bidirectional schedules, 0…v−1 interleaved). A named
    tuple: plans hold hundreds of thousands of them."""

    kind: PassKind
    micro_batch: int
    stage: int
    chunk: int = 0


#: What a device runs at once: one pass, or a forward and a backward pass that overlap.
Op = tuple[Pass, ...]


@dataclass(frozen=True)
class Plan:
    """A schedule instantiated for ``devices`` devices and ``micro_batches`` micro-batches.

    ``orders[d]``: device d's operations in order. ``virtual_stages``: S, the chunks a micro-batch visits.
    ``chunk_fraction``: a chunk's share of one device's per-micro-batch work and activations when the
    device holds all its chunks (1/v interleaved, 1/2 V-shaped, 1 for DualPipe, which holds two full
    stages). ``device_of(micro_batch, stage)``: the device holding a virtual stage."""

    name: str
    devices: int
    micro_batches: int
    virtual_stages: int
    chunk_fraction: float
    orders: tuple[tuple[Op, ...], ...]
    device_of: Callable[[int, int], int]


def linear_device(devices: int) -> Callable[[int, int], int]:
    """Stage j on device j mod p (one chunk: j itself; Megatron interleaving: chunk j // p)."""
    return lambda micro_batch, stage: stage % devices


def v_device(devices: int) -> Callable[[int, int], int]:
    """V shape over 2p virtual stages: stage j on device j for j < p, else on device 2p − 1 − j."""
    return lambda micro_batch, stage: stage if stage < devices else 2 * devices - 1 - stage


class PipelineSchedule:
    """A schedule: its name, the per-device order of passes (:meth:`plan`), and where the papers publish
    them, the closed-form bubble and peak in-flight activations (:meth:`closed_form_bubble_s`).

    ``split_backward``: B and W are separate passes. ``tiles_iterations``: successive steps overlap as a
    parallelogram (Qi et al. 2024 §4, optimizer post-validation: no synchronisation between steps), so the
    per-step time is the busiest device's span (first pass to last), not the makespan.
    ``parameter_copies``: model-parameter copies per device relative to 1F1B (DualPipe keeps 2).
    ``v_shape``: two chunks per device in a V (:func:`v_device`), else chunk c of device d is virtual stage
    c·p + d (:func:`linear_device`). ``dual_pipe``: the DualPipe family (overlapped forward/backward pairs fed
    from both ends), which needs at least 2·pp micro-batches (deepseek-ai/DualPipe ``step`` asserts it).
    Subclasses give :meth:`orders`; :meth:`plan` checks and assembles."""

    #: the :class:`~distcalc.parallel.Schedule` member this class implements: its spelling and integer code
    schedule: Schedule
    description: str = ""
    reference: str = ""

    @property
    def name(self) -> str:
        """The ``--schedule`` spelling."""
        return self.schedule.value

    @property
    def code(self) -> int:
        """The integer code of the vectorised step model."""
        return self.schedule.code
    split_backward: bool = False
    tiles_iterations: bool = False
    parameter_copies: int = 1
    v_shape: bool = False
    dual_pipe: bool = False

    def check(self, devices: int, micro_batches: int, vpp: int = 1) -> None:
        """Raise :class:`ConfigError` when the schedule cannot run this shape (p ≥ 1, m ≥ 1, and
        :func:`distcalc.parallel.schedule_shape_problem`, the rule :class:`~distcalc.parallel.ParallelConfig`
        applies)."""
        if devices < 1 or micro_batches < 1:
            raise ConfigError(f"schedule {self.name}: pp({devices}) and micro-batches({micro_batches}) must be >= 1")
        problem = schedule_shape_problem(self.code, devices, micro_batches)
        if problem:
            raise ConfigError(problem)

    def chunks(self, vpp: int) -> int:
        """Model chunks per device (1; 2 on V-shaped schedules; overridden by interleaving)."""
        return 2 if self.v_shape else 1

    def chunk_fraction(self, vpp: int) -> float:
        """A chunk's share of one device's per-micro-batch work (1 / chunks; DualPipe overrides)."""
        return 1.0 / self.chunks(vpp)

    def device_map(self, devices: int, micro_batches: int) -> Callable[[int, int], int]:
        """Which device holds virtual stage j of a micro-batch."""
        return v_device(devices) if self.v_shape else linear_device(devices)

    def orders(self, devices: int, micro_batches: int, vpp: int) -> tuple[tuple[Op, ...], ...]:  # pragma: no cover
        """Every device's operations in order (the schedule itself)."""
        raise NotImplementedError

    def plan(self, devices: int, micro_batches: int, vpp: int = 1) -> Plan:
        """The checked per-device order of passes for ``devices`` stages and ``micro_batches``."""
        self.check(devices, micro_batches, vpp)
        return Plan(self.name, devices, micro_batches, devices * self.chunks(vpp), self.chunk_fraction(vpp),
                    tuple(tuple(o) for o in self.orders(devices, micro_batches, vpp)),
                    self.device_map(devices, micro_batches))

    def closed_form_bubble_s(self, devices: int, micro_batches: int, t_f: float, t_b: float,
                             t_w: float) -> float | None:
        """Published bubble (seconds) for per-chunk pass times ``t_f``, ``t_b`` (input grad), ``t_w``; None
        when no paper gives one. The bubble is the makespan (or, for tiling schedules, the busiest span)
        minus one device's busy time."""
        return None

    def closed_form_peak_in_flight(self, devices: int) -> float | None:
        """Published peak activation memory, in units of one device's share of one micro-batch's
        activations under 1F1B (the papers' ``M_B``); None when none is published."""
        return None
