"""``distcalc search --plot``: step time vs memory per GPU of every feasible configuration, one colour per
parallel layout (TP·PP·CP), the Pareto front as a line and the GPU's usable memory as a vertical line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from distcalc.render.plots.axes import pyplot, seconds_log_axis
from distcalc.units import GIB

#: Layouts drawn in their own colour (the rest grey): the ones holding the fastest configurations.
MAX_LAYOUTS = 9


def _layout(tp: int, pp: int, cp: int, ep: int) -> str:
    parts = [f"TP{tp}", f"PP{pp}"] + ([f"CP{cp}"] if cp > 1 else []) + ([f"EP{ep}"] if ep > 1 else [])
    return " ".join(parts)


def plot_search(result: Any, path: Path) -> None:
    """Write the scatter plot of a :class:`distcalc.search.SearchResult` to ``path`` (PNG)."""
    plt = pyplot()
    columns = result.columns()
    step = np.asarray(columns["step_time_s"], dtype=float)
    memory = np.asarray(columns["memory_bytes"], dtype=float) / GIB
    layouts = [_layout(*v) for v in zip(columns["tp"], columns["pp"], columns["cp"], columns["ep"])]
    fig, ax = plt.subplots(figsize=(8.5, 5.2))
    ranked = list(dict.fromkeys(layouts))  # fastest first (columns are sorted by step time)
    coloured = ranked[:MAX_LAYOUTS]
    cmap = plt.get_cmap("tab10")
    labels = np.asarray(layouts)
    rest = ~np.isin(labels, coloured)
    if rest.any():
        ax.scatter(memory[rest], step[rest], s=6, color="0.75", label=f"{len(ranked) - len(coloured)} other layouts")
    for i, name in enumerate(coloured):
        mask = labels == name
        ax.scatter(memory[mask], step[mask], s=9, color=cmap(i % 10), label=name)
    front = result.pareto_memory()
    if front:
        ax.plot([r["memory_bytes"] / GIB for r in front], [r["step_time_s"] for r in front], color="black", lw=1,
                drawstyle="steps-post", label="Pareto front")
    usable = result.gpu_memory_bytes * (1 - result.headroom) / GIB
    ax.axvline(usable, color="red", ls="--", lw=1, label=f"usable memory ({100 * (1 - result.headroom):g}%)")
    ax.set_yscale("log")
    seconds_log_axis(ax.yaxis)
    ax.set_ylabel("step time")
    ax.set_xlabel("memory per GPU, worst stage (GiB)")
    ax.set_title(f"{result.model} on {result.cluster}: {len(step):,} feasible configurations", loc="left")
    ax.legend(fontsize=7, loc="upper right", ncol=2, title="layout (TP·PP·CP)", title_fontsize=7)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
