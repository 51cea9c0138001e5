"""Pipeline schedules as objects, one module each, registered in :data:`SCHEDULES`.

Each schedule produces a :class:`~distcalc.schedules.base.Plan` — every device's ordered passes (F
forward, B input gradient, W weight gradient, BW full backward; chunk and micro-batch) — that
:func:`~distcalc.schedules.execute.execute` runs with real per-pass times (bubble, makespan) and
:func:`~distcalc.schedules.execute.peak_in_flight` counts (activation memory). Where a paper publishes a
closed form, the schedule returns it and the tests check it against the executed plan.

| name | module | source |
|---|---|---|
| gpipe, 1f1b, interleaved | :mod:`.classic` | Huang et al. 2019; Narayanan et al. 2021 |
| zero-bubble (ZB-H1, closed form), zb-h1, zb-h2, zb-2p | :mod:`.zero_bubble` | Qi et al. 2024 (ICLR) |
| zb-v | :mod:`.zb_v` | Qi et al. 2024 (arXiv:2401.10241 v2) |
| dualpipe | :mod:`.dualpipe` | DeepSeek-V3 report; deepseek-ai/DualPipe |
| dualpipev | :mod:`.dualpipev` | deepseek-ai/DualPipe |
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from distcalc.errors import ConfigError
from distcalc.schedules.base import Op, Pass, PassKind, PipelineSchedule, Plan
from distcalc.schedules.classic import GPipe, Interleaved, OneFOneB
from distcalc.schedules.dualpipe import DualPipe
from distcalc.schedules.dualpipev import DualPipeV
from distcalc.schedules.execute import Execution, PassTimes, Program, compile_plan, execute, peak_in_flight
from distcalc.schedules.zb_v import ZeroBubbleV
from distcalc.schedules.zero_bubble import ZeroBubble2p, ZeroBubbleClosedForm, ZeroBubbleH1, ZeroBubbleH2

#: Every schedule by CLI name (``zero-bubble`` is ZB-H1 priced by its closed form, ``zb-h1`` executed).
SCHEDULES: dict[str, PipelineSchedule] = {
    s.name: s for s in (GPipe(), OneFOneB(), Interleaved(), ZeroBubbleClosedForm(), ZeroBubbleH1(), ZeroBubbleH2(),
                        ZeroBubble2p(), ZeroBubbleV(), DualPipe(), DualPipeV())}
#: The schedule object of each integer code (:attr:`distcalc.parallel.Schedule.code`).
BY_CODE: dict[int, PipelineSchedule] = {s.code: s for s in SCHEDULES.values()}
#: Model-parameter copies per device, indexed by schedule code (vectorised memory formulas).
PARAMETER_COPIES = np.array([BY_CODE[code].parameter_copies for code in range(len(BY_CODE))], dtype=float)
#: Whether each schedule holds two chunks per device in a V (its class flag ``v_shape``: virtual stage j and
#: 2p − 1 − j on device j), indexed by schedule code: one indexing operation reads an array of codes.
V_SHAPED = np.array([BY_CODE[code].v_shape for code in range(len(BY_CODE))], dtype=bool)
#: Whether each schedule is of the DualPipe family (its class flag ``dual_pipe``: at least 2·pp micro-batches),
#: indexed by schedule code like :data:`V_SHAPED`.
DUAL_PIPE = np.array([BY_CODE[code].dual_pipe for code in range(len(BY_CODE))], dtype=bool)
#: The codes of the V-shaped schedules (:data:`V_SHAPED`), for scalar membership tests.
V_SHAPED_SCHEDULES: tuple[int, ...] = tuple(int(code) for code in np.flatnonzero(V_SHAPED))


def get_schedule(name_or_code: str | int) -> PipelineSchedule:
    """The schedule object for a CLI name or an integer code; :class:`ConfigError` naming the valid ones."""
    table = BY_CODE if isinstance(name_or_code, int) else SCHEDULES
    if name_or_code not in table:
        raise ConfigError(f"unknown schedule {name_or_code!r}; valid: {', '.join(map(str, table))}")
    return table[name_or_code]


@lru_cache(maxsize=512)
def cached_plan(code: int, devices: int, micro_batches: int, vpp: int = 1) -> Plan:
    """The plan of schedule ``code`` for this shape (cached: plans do not depend on times)."""
    return get_schedule(code).plan(devices, micro_batches, vpp)


@lru_cache(maxsize=512)
def cached_program(code: int, devices: int, micro_batches: int, vpp: int = 1) -> Program:
    """The compiled plan of schedule ``code`` for this shape (cached)."""
    return compile_plan(cached_plan(code, devices, micro_batches, vpp))


@lru_cache(maxsize=512)
def peak_in_flight_counts(code: int, devices: int, micro_batches: int, vpp: int = 1) -> tuple[float, ...]:
    """Executed peak in-flight activations per device (stage units) of schedule ``code``."""
    return tuple(peak_in_flight(cached_plan(code, devices, micro_batches, vpp)))


__all__ = ["BY_CODE", "DUAL_PIPE", "PARAMETER_COPIES", "SCHEDULES", "V_SHAPED", "V_SHAPED_SCHEDULES", "Execution", "Op", "Pass", "PassKind", "PassTimes", "PipelineSchedule", "Plan",
           "Program", "cached_plan", "cached_program", "compile_plan", "execute", "get_schedule", "peak_in_flight", "peak_in_flight_counts"]
