"""Figures of bench results (matplotlib, imported lazily with the Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from distcalc.calibration.collectives import group_rows
from distcalc.render.plots.axes import pyplot, save_log_log


def _percentile_band(group: list[dict[str, Any]]) -> tuple[list[float], list[float]] | None:
    """busbw (GB/s) at the p99 and at the p1 trial time of every row, or None when the rows lack them."""
    if not all(r.get("p99_time_s") and r.get("p1_time_s") for r in group):
        return None
    low = [r["busbw_bytes_per_s"] * r["time_s"] / r["p99_time_s"] / 1e9 for r in group]
    high = [r["busbw_bytes_per_s"] * r["time_s"] / r["p1_time_s"] / 1e9 for r in group]
    return low, high


def plot_busbw(rows: list[dict[str, Any]], path: str | Path, title: str = "") -> Path:
    """busbw (GB/s, 1e9 B/s as nccl-tests prints it) against message size, one line per collective/tier."""
    plt = pyplot()
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for (collective, tier), group in group_rows(rows).items():
        group = sorted(group, key=lambda r: r["size_bytes"])
        label = collective if tier == "intra" else f"{collective} ({tier})"
        sizes = [r["size_bytes"] for r in group]
        line, = axes.plot(sizes, [r["busbw_bytes_per_s"] / 1e9 for r in group], marker="o", markersize=3,
                          label=label)
        band = _percentile_band(group)
        if band is not None:  # busbw ∝ 1/time: the p99 time is the low edge, the p1 time the high edge
            axes.fill_between(sizes, band[0], band[1], color=line.get_color(), alpha=0.2, linewidth=0,
                              label=f"{label} p1–p99")
    return save_log_log(figure, axes, xlabel="message size M (bytes, NCCL convention)",
                        ylabel="bus bandwidth (GB/s)", title=title or "distcalc bench collectives: busbw vs size",
                        path=path)
