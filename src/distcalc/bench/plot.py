"""Figures of bench results (matplotlib, imported lazily with the Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from distcalc.plots import save_log_log
from distcalc.calibration.collectives import group_rows


def plot_busbw(rows: list[dict[str, Any]], path: str | Path, title: str = "") -> Path:
    """busbw (GB/s, 1e9 B/s as nccl-tests prints it) against message size, one line per collective/tier."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for (collective, tier), group in group_rows(rows).items():
        group = sorted(group, key=lambda r: r["size_bytes"])
        label = collective if tier == "intra" else f"{collective} ({tier})"
        axes.plot([r["size_bytes"] for r in group], [r["busbw_bytes_per_s"] / 1e9 for r in group],
                  marker="o", markersize=3, label=label)
    return save_log_log(figure, axes, xlabel="message size M (bytes, NCCL convention)",
                        ylabel="bus bandwidth (GB/s)", title=title or "distcalc bench collectives: busbw vs size",
                        path=path)
