"""Figures of a simulated collective (matplotlib imported lazily, Agg backend).

* mesh / torus: a heatmap per link direction (+x, −x, +y, −y, …): cell (x, y) is the bytes that GPU (x, y)
  sent on that link over the whole collective; 3D shapes put the z layers side by side.
* every other topology: a per-step timeline, the α part and the busiest-link part of every step stacked,
  with the bytes on the busiest link of each step.
"""

from __future__ import annotations

import numpy as np

from distcalc.render.plots.axes import pyplot
from distcalc.topology import TopologyKind


def plot_simulation(result, path: str) -> str:
    """Write the figure for ``result`` (a :class:`distcalc.simulate.SimulationResult`) to ``path``."""
    plt = pyplot()
    topo = result.topology
    if topo.kind in (TopologyKind.MESH, TopologyKind.TORUS) and topo.gpus > 1:
        fig = _link_heatmaps(plt, result)
    else:
        fig = _timeline(plt, result)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def _title(result) -> str:
    topo = result.topology
    shape = "x".join(map(str, topo.shape)) + " " if topo.shape and topo.kind != TopologyKind.RING else ""
    verdict = "verified" if result.verified else "NOT VERIFIED"
    return (f"{result.collective} {result.algorithm} on {shape}{topo.kind.value} ({topo.gpus} GPUs), "
            f"M = {result.size_bytes:.4g} B — {verdict}\nsimulated {result.time_s * 1e6:.4g} µs, "
            f"analytic {result.analytic.time_s * 1e6:.4g} µs, {result.steps} steps"
            + (", event timing (bar: how far the step's last arrival moves the end)"
               if result.timing.mode.value == "event" else ""))


def _link_heatmaps(plt, result):
    topo, timing = result.topology, result.timing
    shape = tuple(topo.shape) + (1,) * (3 - len(topo.shape))
    nx, ny, nz = shape
    axes = [a for a, size in enumerate(shape) if size > 1]
    coords = np.array(np.unravel_index(np.arange(topo.gpus), shape[::-1]))[::-1]
    panels = []
    for axis in axes:
        for sign in (1, -1):
            grid = np.full((ny, nx * nz + (nz - 1)), np.nan)  # z layers side by side, one blank column between
            panels.append((axis, sign, grid))
    for link, load in zip(timing.links, timing.link_bytes):
        src, dst = link.src, link.dst
        c_src, c_dst = coords[:, src], coords[:, dst]
        axis = int(np.flatnonzero(c_src != c_dst)[0])
        delta = (c_dst[axis] - c_src[axis]) % shape[axis]
        sign = 1 if delta == 1 else -1
        if shape[axis] == 2:
            sign = 1 if c_src[axis] == 0 else -1
        for p_axis, p_sign, grid in panels:
            if p_axis == axis and p_sign == sign:
                x, y, z = c_src
                grid[y, z * (nx + 1) + x] = load
    mib = 2.0**20
    vmax = max(float(timing.link_bytes.max()) / mib, 1e-9)
    cols = 2
    rows = (len(panels) + 1) // 2
    width = nx * nz + nz - 1
    panel_h = max(2.0, 4.6 * ny / width + 1.0)
    fig, grid_axes = plt.subplots(rows, cols, figsize=(5.2 * cols + 1.2, panel_h * rows + 1.2), squeeze=False,
                                  constrained_layout=True)
    image = None
    for ax, (axis, sign, grid) in zip(grid_axes.ravel(), panels):
        grid = grid / mib
        image = ax.imshow(grid, cmap="viridis", vmin=0, vmax=vmax, origin="lower")
        name = "xyz"[axis]
        ax.set_title(f"{'+' if sign > 0 else '−'}{name} link of each GPU", fontsize=10)
        columns = [c for c in range(width) if c % (nx + 1) < nx]
        ax.set_xticks(columns, [str(c % (nx + 1)) for c in columns], fontsize=7 if width > 12 else 9)
        ax.set_yticks(range(ny))
        ax.set_xlabel("x" + (f" (z = 0 … {nz - 1} left to right)" if nz > 1 else ""))
        ax.set_ylabel("y")
        if grid.size <= 128:
            for (y, x), value in np.ndenumerate(grid):
                if np.isfinite(value):
                    ax.text(x, y, f"{value:.3g}", ha="center", va="center", fontsize=7,
                            color="white" if value < 0.6 * vmax else "black")
    for ax in grid_axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.colorbar(image, ax=grid_axes.ravel().tolist(), label="MiB sent over the link (white: no link)")
    fig.suptitle(_title(result) + f"\nbusiest link {result.busiest_link.src}→{result.busiest_link.dst}: "
                 f"{result.max_link_bytes / mib:.4g} MiB", fontsize=9)
    return fig


def _timeline(plt, result):
    timing = result.timing
    steps = np.arange(timing.steps)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    bandwidth_part = timing.step_time_s - timing.step_latency_s
    ax.bar(steps, timing.step_latency_s * 1e6, color="#999999", label="α (latency)")
    ax.bar(steps, bandwidth_part * 1e6, bottom=timing.step_latency_s * 1e6, color="#3b75af",
           label="busiest link bytes / B")
    ax.set_xlabel("step")
    ax.set_ylabel("step time (µs)")
    twin = ax.twinx()
    twin.plot(steps, timing.step_max_link_bytes / 2**20, color="#d62728", marker=".",
              label="bottleneck link (MiB)")
    twin.set_ylabel("MiB on the step's bottleneck link")
    twin.set_ylim(bottom=0)
    handles = ax.get_legend_handles_labels()
    other = twin.get_legend_handles_labels()
    ax.legend(handles[0] + other[0], handles[1] + other[1], loc="upper right", fontsize=8)
    ax.set_title(_title(result), fontsize=9)
    return fig
