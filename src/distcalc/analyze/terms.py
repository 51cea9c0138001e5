"""Typed records of the step model's intermediate terms (:mod:`distcalc.analyze.core`).

Each record holds NumPy arrays over the same rows (the distinct union rows of the step model, or every
configuration once gathered); they name what the formulas of :mod:`distcalc.analyze.core` cite.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Generic, TypeVar

import numpy as np

T = TypeVar("T")


@dataclass(frozen=True)
class DpCollectives:
    """Seconds of one call of each data-parallel collective of :func:`distcalc.traffic.dp_gradient_messages`
    (Rajbhandari et al. 2020 §7.2), in that function's message order: either the time on the link or the part
    of it exposed beyond the compute it overlaps. How many times each runs per step depends on the ZeRO stage
    and the micro-batch count (:func:`distcalc.analyze.dp_tables.dp_tables`)."""

    grad_all_reduce_s: Any  #: gradient AllReduce (ZeRO 0; ZeRO-1 all-reducing sharded gradients)
    grad_reduce_scatter_s: Any  #: gradient ReduceScatter (ZeRO 1, 2)
    param_all_gather_s: Any  #: updated-parameter AllGather after the optimizer step (ZeRO 1, 2)
    zero3_forward_gather_s: Any  #: ZeRO-3 parameter AllGather before the forward of a micro-batch
    zero3_backward_gather_s: Any  #: ZeRO-3 parameter AllGather before the backward of a micro-batch

    def in_message_order(self) -> tuple[Any, Any, Any, Any, Any]:
        """The five times in the order of :func:`distcalc.traffic.dp_gradient_messages`."""
        return (self.grad_all_reduce_s, self.grad_reduce_scatter_s, self.param_all_gather_s,
                self.zero3_forward_gather_s, self.zero3_backward_gather_s)


def dp_collectives_of(block: dict[str, Any]) -> DpCollectives:
    """The per-call DP collective times that :func:`distcalc.analyze.blocks.dp_block` priced."""
    return DpCollectives(block["grad_ar"], block["grad_rs"], block["ag_step"], block["ag3_f"], block["ag3_b"])



class StagePosition(IntEnum):
    """Where a pipeline stage sits, as the codes of :meth:`ByStage.choose` (an array of them picks per row):
    the step model's slowest stage is the last one unless the first one is as slow (ties), or a middle one
    holds more layers than either end (uneven splits)."""

    LAST = 0
    FIRST = 1
    MIDDLE = 2


@dataclass(frozen=True)
class ByStage(Generic[T]):
    """One term of the first, a middle and the last pipeline stage (with one stage, first and last are the
    same stage and hold both ends' terms)."""

    first: T
    middle: T
    last: T

    def choose(self, position: Any) -> Any:
        """The term of the stage at ``position`` (a :class:`StagePosition`, or an array of their codes)."""
        return np.choose(position, (self.last, self.first, self.middle))
