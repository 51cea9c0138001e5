"""Shared matplotlib finishing for distcalc's figures (import lazily: matplotlib is the `plot` extra)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def save_log_log(figure: Any, axes: Any, *, xlabel: str, ylabel: str, title: str, path: str | Path) -> Path:
    """Log-log axes (x in powers of two), labels, grid and legend; save at 120 dpi and close the figure."""
    import matplotlib.pyplot as plt

    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    out = Path(path)
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return out
