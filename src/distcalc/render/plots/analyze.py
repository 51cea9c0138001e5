"""Figure of ``distcalc analyze --plot``: the step-time breakdown and the pipeline timeline.

matplotlib is imported lazily (Agg backend) so the library works without the ``plot`` extra; the timeline
itself is computed by :func:`distcalc.analyze.timeline.timeline_for`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from distcalc.analyze.timeline import timeline_for
from distcalc.render.plots.axes import pyplot, wrap_title

#: Breakdown components drawn (key, label)
COMPONENTS = (
    ("compute_s", "compute"), ("recompute_s", "recompute"), ("tp_exposed_s", "TP comm"),
    ("cp_exposed_s", "CP comm"), ("ep_exposed_s", "EP comm"), ("pp_p2p_s", "PP p2p"),
    ("bubble_s", "pipeline bubble"), ("dp_exposed_s", "DP comm (exposed)"),
    ("embedding_sync_s", "embedding sync"), ("optimizer_s", "optimizer"),
)


def plot_analysis(report: Any, path: Path | str) -> None:
    """Write a PNG: left, the step time by component; right, the pipeline timeline (F/B/W per stage)."""
    plt = pyplot()
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
