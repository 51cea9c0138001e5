"""Figure of ``distcalc analyze --plot``: the step-time breakdown and the pipeline timeline.

matplotlib is imported lazily (Agg backend) so the library works without the ``plot`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from distcalc.schedules import PassTimes, execute, get_schedule

#: Breakdown components drawn (key, label)
COMPONENTS = (
    ("compute_s", "compute"), ("recompute_s", "recompute"), ("tp_exposed_s", "TP comm"),
    ("cp_exposed_s", "CP comm"), ("ep_exposed_s", "EP comm"), ("pp_p2p_s", "PP p2p"),
    ("bubble_s", "pipeline bubble"), ("dp_exposed_s", "DP comm (exposed)"),
    ("embedding_sync_s", "embedding sync"), ("optimizer_s", "optimizer"),
)
MAX_TIMELINE_MICRO_BATCHES = 16


def timeline_for(report: Any) -> tuple[Any, int]:
    """Executed schedule of the report's pipeline (at most 16 micro-batches shown, rounded to what the
    schedule needs): every device's operations with start and end (:mod:`distcalc.schedules`)."""
    pipe = report.pipeline
    pp, vpp = max(int(pipe["stages"]), 1), int(pipe["vpp"])
    schedule = get_schedule(str(pipe["schedule"]))
    shown = min(int(pipe["micro_batches"]), max(MAX_TIMELINE_MICRO_BATCHES, pp))
    if schedule.name == "interleaved":
        shown = max(pp, shown - shown % pp)
    if schedule.name.startswith("dualpipe"):
        shown = max(2 * pp, shown - shown % 2)
    plan = schedule.plan(pp, shown, vpp)
    c = plan.chunk_fraction
    forward, backward = pipe["stage_forward_s"], pipe["stage_backward_s"]
    weight = backward / 2 if schedule.split_backward else 0.0  # W ≈ half the backward (B and W each one GEMM)
    return execute(plan, PassTimes(c * forward, c * (backward - weight), c * weight), keep_events=True), shown


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
    left.set_title(f"step {report.step_time_s:.3g} s, MFU {100 * report.mfu:.1f} %")
    left.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2)

    timeline, shown = timeline_for(report)
    colours = {"F": "tab:blue", "B": "tab:orange", "W": "tab:green", "BW": "tab:red", "F&B": "tab:purple"}
    hatches = ("", "//", "..", "xx")
    for device, op, start, end in timeline.events:
        kind = "F&B" if len(op) == 2 else op[0].kind.value
        right.barh(device, float(end[0] - start[0]), left=float(start[0]), color=colours[kind],
                   hatch=hatches[op[-1].chunk % len(hatches)], edgecolor="white", linewidth=0.3)
    right.set_yticks(range(timeline.plan.devices))
    right.invert_yaxis()
    right.set_xlabel("seconds")
    right.set_ylabel("pipeline stage (device)")
    total = int(report.pipeline["micro_batches"])
    note = "" if shown == total else f" (first {shown} of {total} micro-batches)"
    right.set_title(f"{report.pipeline['schedule']} schedule{note}: F forward, B input-grad, W weight-grad, "
                    "BW full backward, F&B overlapped; hatch = chunk", fontsize=9)
    used = sorted({("F&B" if len(op) == 2 else op[0].kind.value) for _, op, _, _ in timeline.events}, key=list(colours).index)
    chunks = sorted({op[-1].chunk for _, op, _, _ in timeline.events})
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[k]) for k in used]
    handles += [plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black", hatch=hatches[c % len(hatches)])
                for c in chunks if len(chunks) > 1]
    right.legend(handles, used + [f"chunk {c}" for c in chunks if len(chunks) > 1], fontsize=7, loc="upper left",
                 bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(f"{report.model['name']} on {report.cluster['gpus']}× {report.cluster['gpu']} ({report.cluster['name']})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
