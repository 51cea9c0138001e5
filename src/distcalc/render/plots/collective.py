"""Time-versus-size plot of collective algorithms (matplotlib is imported lazily, Agg backend)."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from distcalc.render.plots.axes import pyplot, save_log_log


def plot_time_vs_size(sizes_bytes: Sequence[float], times_s: Mapping[str, Sequence[float]], path: str | Path,
                      title: str = "", lower_bound_s: Sequence[float] | None = None) -> Path:
    """Draw one log-log line per algorithm (time vs M) and, if given, the lower bound; save to ``path``."""
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for name, times in times_s.items():
        axis.plot(sizes_bytes, times, marker="o", markersize=3, label=name)
    if lower_bound_s is not None:
        axis.plot(sizes_bytes, lower_bound_s, linestyle="--", color="black", label="lower bound")
    return save_log_log(figure, axis, xlabel="size M (bytes, NCCL convention)", ylabel="time (s)", title=title,
                        path=path)


def plot_busbw_overlay(series: Mapping[str, tuple[Sequence[float], Sequence[float]]], path: str | Path,
                       title: str = "") -> Path:
    """Bus bandwidth (GB/s) vs size, one line per named series (``measured …`` drawn as markers only)."""
    plt = pyplot()
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for name, (sizes, busbw) in series.items():
        style = {"marker": "o", "linestyle": "none"} if name.startswith("measured") else {"marker": "."}
        axis.plot(sizes, [b / 1e9 for b in busbw], markersize=4, label=name, **style)
    return save_log_log(figure, axis, xlabel="size M (bytes, NCCL convention)", ylabel="bus bandwidth (GB/s)",
                        title=title, path=path)
