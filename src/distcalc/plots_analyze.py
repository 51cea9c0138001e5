"""Figure of ``distcalc analyze --plot``: the step-time breakdown and the pipeline timeline.

matplotlib is imported lazily (Agg backend) so the library works without the ``plot`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from distcalc.parallel import Schedule
from distcalc.pipeline import simulate_schedule
from distcalc.plots import wrap_title
from distcalc.schedules import get_schedule

#: Breakdown components drawn (key, label)
COMPONENTS = (
    ("compute_s", "compute"), ("recompute_s", "recompute"), ("tp_exposed_s", "TP comm"),
    ("cp_exposed_s", "CP comm"), ("ep_exposed_s", "EP comm"), ("pp_p2p_s", "PP p2p"),
    ("bubble_s", "pipeline bubble"), ("dp_exposed_s", "DP comm (exposed)"),
    ("embedding_sync_s", "embedding sync"), ("optimizer_s", "optimizer"),
)
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


def plot_analysis(report: Any, path: Path | str) -> None:
    """Write a PNG: left, the step time by component; right, the pipeline timeline (F/B/W per stage)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [1, 2]})
    parts = [(label, report.time_breakdown.get(key, 0.0)) for key, label in COMPONENTS]
    parts = [(label, value) for label, value in parts if value > 0]
    start = 0.0
    for label, value in parts:
        left.barh([0], [value], left=[start], label=f"{label} {value:.3g} s")
        start += value
    left.set_yticks([])
    left.set_xlabel("seconds per step")
    left.set_title(f"step {report.step_time_s:.3g} s, MFU {100 * report.mfu:.1f} %", fontsize=10)
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)

    timeline, shown = timeline_for(report)
    colours = {"F": "tab:blue", "B": "tab:orange", "W": "tab:green", "F&B": "tab:purple"}
    hatches = ("", "//", "..", "xx")
    for event in timeline.events:
        right.barh(event.stage, event.end_s - event.start_s, left=event.start_s, color=colours[event.kind],
                   hatch=hatches[event.chunk % len(hatches)], edgecolor="white", linewidth=0.3)
    right.set_yticks(range(max(int(report.pipeline["stages"]), 1)))
    right.invert_yaxis()
    right.set_xlabel("seconds")
    right.set_ylabel("pipeline stage (device)")
    total = int(report.pipeline["micro_batches"])
    pipe_name = report.pipeline["schedule"]
    note = "" if shown == total else f" (first {shown} of {total} micro-batches)"
    used = sorted({e.kind for e in timeline.events}, key=list(colours).index)  # no W legend without W
    chunks = sorted({e.chunk for e in timeline.events})
    names = {"F": "F forward", "B": "B backward (input-grad)" if "W" in used else "B backward",
             "W": "W weight-grad", "F&B": "F&B overlapped"}
    right.set_title(wrap_title(f"{report.pipeline['schedule']} schedule{note}: " + ", ".join(names[k] for k in used)
                               + ("; hatch = chunk" if len(chunks) > 1 else "")
                               + (" (DualPipe: chunk 1 = the reverse direction)" if pipe_name == "dualpipe" else "")
                               + (", an F&B pair hatched by its backward's" if "F&B" in used else ""), 90), fontsize=9)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[k]) for k in used]
    handles += [plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch=hatches[c % len(hatches)])
                for c in chunks if len(chunks) > 1]
    right.legend(handles, used + [f"chunk {c}" for c in chunks if len(chunks) > 1], fontsize=7, loc="upper left",
                 bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(f"{report.model['name']} on {report.cluster['gpus']}× {report.cluster['gpu']} ({report.cluster['name']})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
