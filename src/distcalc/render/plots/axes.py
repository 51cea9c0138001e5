"""Shared matplotlib set-up and finishing for distcalc's figures: the Agg backend, title wrapping, axes labelled
in binary sizes and in ms / s, the log-log layout of the size sweeps (matplotlib is the ``plot`` extra: it is
imported inside the functions, never at module import)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from distcalc.units import format_size, format_time

#: Characters per title line: longer titles wrap instead of running off a 7-inch figure.
TITLE_WIDTH = 70


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only; no display is needed or opened)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def wrap_title(title: str, width: int = TITLE_WIDTH) -> str:
    """``title`` broken into lines of at most ``width`` characters (so the figure does not clip it)."""
    return "\n".join(textwrap.wrap(title, width)) if title else title


def binary_size_axis(axis: Any) -> None:
    """Label a byte axis with binary units (``1 KiB``, ``256 MiB``, ``8 GiB``) instead of 2^n."""
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _pos: format_size(value, digits=3) if value > 0 else "0"))


def seconds_log_axis(axis: Any) -> None:
    """Label a log-scaled time axis in ms / s / min (``400 ms``, ``2 s``) instead of ``4×10^-1``; minor ticks at
    2, 3 and 5 of each decade, labelled the same way."""
    from matplotlib.ticker import FuncFormatter, LogLocator

    label = FuncFormatter(lambda value, _pos: format_time(value) if value > 0 else "0")
    axis.set_major_formatter(label)
    axis.set_minor_locator(LogLocator(base=10, subs=(2.0, 3.0, 5.0)))
    axis.set_minor_formatter(label)


def save_log_log(figure: Any, axes: Any, *, xlabel: str, ylabel: str, title: str, path: str | Path,
                 x_bytes: bool = True) -> Path:
    """Log-log axes (x in powers of two, labelled in KiB/MiB/GiB when ``x_bytes``), labels, grid and legend;
    save at 120 dpi and close the figure."""
    plt = pyplot()
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    if x_bytes:
        binary_size_axis(axes.xaxis)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(wrap_title(title), fontsize=10)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    out = Path(path)
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return out
