"""Activation recomputation and pipeline schedule: one enum each, spelling and integer code declared together.

The spelling is what users read and write (CLI, YAML, JSON); the integer ``code`` is what the vectorised
formulas (memory, pipeline, step time, search columns) compare NumPy arrays against. Re-exported by
:mod:`distcalc.parallel`. This module does not import NumPy: the command line's option definitions read these
enums, and ``distcalc analyze --help`` should not pay for NumPy (the elementwise default schedule is
:func:`distcalc.parallel.default_schedule_code`).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

ArrayLike = Any  # int | numpy.ndarray (elementwise formulas)


class CodedEnum(str, Enum):
    """A string enum whose members also carry a fixed integer ``code``: the spelling users read and write
    (CLI, YAML, JSON) and the integer the vectorised formulas (memory, pipeline, step time, search columns)
    compare NumPy arrays against. Each member is declared once as ``NAME = ("spelling", code)``."""

    code: int

    def __new__(cls, value: str, code: int) -> "CodedEnum":
        member = str.__new__(cls, value)
        member._value_ = value
        member.code = code
        return member

    @classmethod
    def from_code(cls, code: int) -> Any:
        """The member with integer ``code``."""
        return _BY_CODE[cls][int(code)]

    @classmethod
    def names_by_code(cls) -> tuple[str, ...]:
        """The spellings indexed by code (``names_by_code()[m.code] == m.value``)."""
        return tuple(m.value for m in _BY_CODE[cls])


class Recompute(CodedEnum):
    """Activation recomputation (Korthikanti et al. 2022 §5): none, selective (attention core), full (per layer);
    selective-op: torchtitan's op-level selective checkpointing (every second linear projection of a block and
    all its elementwise ops recomputed; :mod:`distcalc.op_checkpoint`)."""

    NONE = ("none", 0)
    SELECTIVE = ("selective", 1)
    FULL = ("full", 2)
    SELECTIVE_OP = ("selective-op", 3)

    @staticmethod
    def full_weight(code: ArrayLike) -> ArrayLike:
        """1.0 where recompute ``code`` (int or NumPy array) is full recomputation, else 0.0: the weight of the
        terms only full recomputation repeats — the layer's forward collectives and messages re-run in the
        backward pass (Korthikanti et al. 2022 §5). Elementwise on an array (NumPy's own comparison, a float
        array of the same shape)."""
        return (code == Recompute.FULL.code) * 1.0


class Schedule(CodedEnum):
    """Pipeline schedule: GPipe, 1F1B (PipeDream-Flush), interleaved 1F1B, zero-bubble (ZB-H1 by its closed
    form), ZB-H1 executed, ZB-H2, ZB-2p, ZB-V, DualPipe, DualPipeV (:mod:`distcalc.schedules`).

    Codes 0–3 keep closed forms; codes >= ``ZB_H2.code`` are executed by :mod:`distcalc.schedules`
    (:meth:`executed`; zb-h1 is ZB-H1 executed, zero-bubble the same schedule by its closed form)."""

    GPIPE = ("gpipe", 0)
    ONE_F_ONE_B = ("1f1b", 1)
    INTERLEAVED = ("interleaved", 2)
    ZERO_BUBBLE = ("zero-bubble", 3)
    ZB_H1 = ("zb-h1", 8)
    ZB_H2 = ("zb-h2", 4)
    ZB_V = ("zb-v", 5)
    DUALPIPE = ("dualpipe", 6)
    DUALPIPEV = ("dualpipev", 7)
    ZB_2P = ("zb-2p", 9)

    @staticmethod
    def executed(code: ArrayLike) -> ArrayLike:
        """Whether schedule ``code`` (int or NumPy array) is executed by :mod:`distcalc.schedules` rather than
        priced by a closed form (elementwise on an array: NumPy's own comparison)."""
        return code >= Schedule.ZB_H2.code


_BY_CODE: dict[type, tuple[Any, ...]] = {
    cls: tuple(sorted(cls, key=lambda m: m.code)) for cls in (Recompute, Schedule)}
assert all(tuple(m.code for m in members) == tuple(range(len(members))) for members in _BY_CODE.values())

def schedule_shape_problem(code: int, pp: int, micro_batches: int) -> str | None:
    """Why schedule ``code`` cannot run ``pp`` stages with ``micro_batches`` micro-batches (None when it can):
    ZB-H2, ZB-V, DualPipe and DualPipeV need pp >= 2; DualPipe (two directions, half the micro-batches each)
    an even pp and an even number of micro-batches; DualPipe and DualPipeV at least 2·pp micro-batches (the
    deepseek-ai/DualPipe ``step`` asserts both)."""
    schedule = Schedule.from_code(code)
    if schedule not in (Schedule.ZB_H2, Schedule.ZB_V, Schedule.DUALPIPE, Schedule.DUALPIPEV, Schedule.ZB_2P):
        return None
    name = schedule.value
    if pp < 2:
        return f"schedule {name} needs pp >= 2 (got pp({pp}))"
    if schedule == Schedule.DUALPIPE and (pp % 2 or micro_batches % 2):
        return f"schedule {name} needs an even pp and an even number of micro-batches (got pp({pp}), {micro_batches})"
    if schedule in (Schedule.DUALPIPE, Schedule.DUALPIPEV) and micro_batches < 2 * pp:
        return f"schedule {name} needs micro-batches({micro_batches}) >= 2 * pp({pp}) = {2 * pp}"
    return None


__all__ = ["CodedEnum", "Recompute", "Schedule", "schedule_shape_problem"]
