"""``distcalc memory --plot``: per-GPU memory of every pipeline stage as stacked bars (matplotlib imported lazily,
Agg backend)."""

from __future__ import annotations

from pathlib import Path

from distcalc.memory import MemoryReport
from distcalc.render.memory_lines import stage_lines
from distcalc.render.plots.axes import pyplot


def plot_memory(report: MemoryReport, path: Path) -> None:
    """Stacked bar per pipeline stage (GiB), with the GPU's memory as a line."""
    plt = pyplot()
    stages = report.stages
    fig, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(stages) + 4), 4.5))
    bottom = [0.0] * len(stages)
    x = [s.stage for s in stages]
    for label, values_bytes in stage_lines(stages):
        values = [value / 2**30 for value in values_bytes]
        ax.bar(x, values, bottom=bottom, label=label)
        bottom = [b + v for b, v in zip(bottom, values)]
    if report.gpu is not None:
        ax.axhline(report.gpu.memory_bytes / 2**30, color="black", linestyle="--", label=f"{report.gpu.name} memory")
    top = max(bottom + ([report.gpu.memory_bytes / 2**30] if report.gpu is not None else []))
    ax.set_ylim(0, top * 1.45)
    ax.set_xticks(x)
    ax.set_xlabel("pipeline stage")
    ax.set_ylabel("GiB per GPU")
    ax.set_title(f"{report.model_name}: memory per GPU by stage")
    ax.legend(fontsize=7, loc="upper center", ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
