"""The pipeline timeline of an analyze report: the executed schedule of its pipeline with the report's own
per-stage forward, backward and weight-gradient times (what ``analyze --plot`` draws and the web API returns)."""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.parallel import Schedule
from distcalc.pipeline import simulate_schedule
from distcalc.schedules import get_schedule

#: Micro-batches shown at most (rounded to what the schedule needs).
MAX_TIMELINE_MICRO_BATCHES = 16


def timeline_for(report: Any) -> tuple[Any, int]:
    """Executed schedule of the report's pipeline (:func:`distcalc.pipeline.simulate_schedule`; at most 16
    micro-batches shown, rounded to what the schedule needs: a multiple of pp interleaved, an even number of
    at least 2·pp for DualPipe) with the report's own per-stage times: F, B (input gradient where the
    schedule splits the backward) and W of a middle stage, scaled per device by its layers (uneven ends),
    and one Send/Recv between devices where P2P overlaps compute (else it is part of F and B)."""
    pipe, config = report.pipeline, report.config or {}
    pp, vpp = max(int(pipe["stages"]), 1), int(pipe["vpp"])
    code = Schedule(pipe["schedule"]).code
    schedule = get_schedule(code)
    shown = min(int(pipe["micro_batches"]), max(MAX_TIMELINE_MICRO_BATCHES, pp))
    if schedule.name == "interleaved":
        shown = max(pp, shown - shown % pp)
    if schedule.name.startswith("dualpipe"):
        shown = max(2 * pp, shown - shown % 2)
    uneven = config.get("first_stage_layers") or config.get("last_stage_layers")
    layers = np.asarray(pipe.get("stage_layers") or [1.0] * pp, dtype=float)
    scale = layers / layers[min(1, pp - 1)] if uneven else 1.0  # the per-stage times are a middle stage's
    forward, backward = pipe["stage_forward_s"] * scale, pipe["stage_backward_s"] * scale
    weight = pipe.get("stage_weight_s", 0.0) * scale if schedule.split_backward else 0.0
    p2p = pipe.get("p2p_transfer_s", 0.0) / 2 if pipe.get("pipeline_p2p_overlap") else 0.0
    return simulate_schedule(code, pp, shown, vpp, forward, backward - weight, weight, p2p), shown
