"""The pipeline timeline of an analyze report as JSON: the same simulated schedule ``analyze --plot`` draws."""

from __future__ import annotations

from typing import Any

from distcalc.analyze import StepReport
from distcalc.analyze.timeline import timeline_for


def timeline_payload(report: StepReport) -> dict[str, Any]:
    """Events (stage, kind F/B/W, micro-batch, chunk, start/end seconds) of the first micro-batches (at most
    16, rounded to pp), the makespan, and how many of the step's micro-batches are shown."""
    timeline, shown = timeline_for(report)
    return {"stages": int(report.pipeline["stages"]), "schedule": report.pipeline["schedule"],
            "micro_batches_shown": shown, "micro_batches": int(report.pipeline["micro_batches"]),
            "makespan_s": float(timeline.makespan_s),
            "events": [{"stage": e.stage, "kind": e.kind, "micro_batch": e.micro_batch, "chunk": e.chunk,
                        "start_s": float(e.start_s), "end_s": float(e.end_s)} for e in timeline.events]}
