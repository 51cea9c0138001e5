"""Multi-dimensional schedules on a grid of ranks (rank = x0 + n0·(x1 + n1·x2), dimension 0 fastest).

Used for torus and mesh (docs/spec/collectives.md §2.3: T01-T04, T06-T08, T10-T12) and for two-level clusters, which are the
2-axis grid (local GPU, node) with a ring on each axis (H01, H04, H05).

A ReduceScatter phase along axis a runs a ring/line ReduceScatter (:mod:`distcalc.simulate.ring`) in every
line of that axis at once. After the phases for axes a1, a2, … a rank holds the chunks whose final owner
agrees with it on those axes, so the bundle a line member reduces for position i is "owner coordinate a = i,
owner coordinates on earlier axes = the line's". Chunk ``owner·P + part·H + h`` is half h of part ``part``
of the owner's shard (P = parts·H chunks per shard).

* dimension-sequential: axes one after another (ASTRA-sim Sys.cc L768-787), fastest B_eff first;
* dimension-concurrent: k parts, part p visits the axes in the base order rotated by p, all parts at once
  (scaling-book sharding.md L337-343);
* AllReduce = ReduceScatter then its time reverse (AllGather visits the axes in reverse, Sys.cc L729).
"""

from __future__ import annotations

import numpy as np

from distcalc.simulate.ring import RingMode, effective_mode, reduce_scatter_rows
from distcalc.simulate.schedule import Rows, concat, sequence


def axis_lines(shape: tuple[int, ...], axis: int) -> np.ndarray:
    """(lines, n_axis) ranks of every line along ``axis``, ordered by the coordinate on that axis."""
    grid = np.arange(int(np.prod(shape))).reshape(shape[::-1])  # index [x_{k-1}, …, x0]
    moved = np.moveaxis(grid, len(shape) - 1 - axis, -1)
    return moved.reshape(-1, shape[axis])


def phase_bundles(shape: tuple[int, ...], axis: int, done: tuple[int, ...], part: int, halves: int,
                  parts_per_shard: int) -> tuple[np.ndarray, np.ndarray]:
    """(lines, bundles (lines, n_axis, b)) for a RS phase along ``axis`` after the axes in ``done``."""
    lines = axis_lines(shape, axis)
    coords = np.array(np.unravel_index(np.arange(int(np.prod(shape))), shape[::-1]))[::-1]  # (ndim, N)
    bundles = []
    for line in lines:
        first = line[0]
        keep = np.ones(coords.shape[1], dtype=bool)
        for d in done:
            keep &= coords[d] == coords[d, first]
        per_pos = []
        for i in range(shape[axis]):
            owners = np.flatnonzero(keep & (coords[axis] == i))
            chunks = owners[:, None] * parts_per_shard + part * halves + np.arange(halves)[None, :]
            per_pos.append(chunks.ravel())
        bundles.append(per_pos)
    return lines, np.array(bundles, dtype=np.int64)


def axis_mode(size: int, wrap: bool, mode: RingMode | None = None) -> RingMode:
    """Ring mode of a phase: bucket (both directions) on a wraparound axis, line on a mesh axis."""
    if mode is not None:
        return effective_mode(size, mode)
    return effective_mode(size, RingMode.BUCKET if wrap else RingMode.LINE)


def needs_halves(shape: tuple[int, ...], modes: dict[int, RingMode]) -> int:
    """2 if some phase splits bundles in halves (bucket on an even axis ≥ 4, counter-rotating rings)."""
    for axis, size in enumerate(shape):
        mode = effective_mode(size, modes.get(axis, RingMode.UNI))
        if size > 1 and (mode == RingMode.COUNTER or (mode == RingMode.BUCKET and size % 2 == 0 and size > 2)):
            return 2
    return 1


def sequential_reduce_scatter_rows(shape: tuple[int, ...], order: list[int], modes: dict[int, RingMode],
                                   halves: int) -> Rows:
    """RS along ``order`` axes, one at a time (every line of an axis concurrently)."""
    phases, done = [], ()
    for axis in order:
        lines, bundles = phase_bundles(shape, axis, done, 0, halves, halves)
        phases.append(reduce_scatter_rows(lines, bundles, modes[axis]))
        done += (axis,)
    return sequence(*phases)


def concurrent_reduce_scatter_rows(shape: tuple[int, ...], base: list[int], modes: dict[int, RingMode],
                                   halves: int) -> Rows:
    """k parts at once, part p visiting ``base`` rotated by p; phases are synchronous."""
    k = len(base)
    phases = []
    done = [()] * k
    for phase in range(k):
        rows = []
        for part in range(k):
            axis = base[(part + phase) % k]
            lines, bundles = phase_bundles(shape, axis, done[part], part, halves, k * halves)
            rows.append(reduce_scatter_rows(lines, bundles, modes[axis]))
            done[part] = done[part] + (axis,)
        length = max(r.span for r in rows)
        # end-align the shorter parts: their traffic meets the phase's last (fullest) steps
        phases.append(concat(*(r.shifted(length - r.span) for r in rows if r.size)))
    return sequence(*phases)


def snake_cycle(shape: tuple[int, ...]) -> np.ndarray:
    """A Hamiltonian cycle of a grid with N even and ≥ 2 axes of size ≥ 2 (docs/spec/collectives.md §4.8): row 0 left to right,
    rows 1 … R−1 snaking over columns 1 … a−1, column 0 back up. "Rows" are a snake over the other axes, so
    consecutive rows are neighbours; the axes are swapped so that the row count is even."""
    axes = [a for a, s in enumerate(shape) if s > 1]
    if len(axes) == 1:
        return axis_lines(shape, axes[0])[0]
    col_axis = next((a for a in axes if (int(np.prod(shape)) // shape[a]) % 2 == 0), axes[0])
    rest = [a for a in axes if a != col_axis]
    # rows: boustrophedon path over the remaining axes
    rows: list[dict[int, int]] = [{}]
    for a in rest:
        nxt = []
        for idx, row in enumerate(rows):
            values = range(shape[a]) if idx % 2 == 0 else range(shape[a] - 1, -1, -1)
            nxt += [{**row, a: v} for v in values]
        rows = nxt
    width = shape[col_axis]

    def rank(row: dict[int, int], col: int) -> int:
        coords = [0] * len(shape)
        for a, v in row.items():
            coords[a] = v
        coords[col_axis] = col
        return int(sum(c * int(np.prod(shape[:a])) for a, c in enumerate(coords)))

    cycle = [rank(rows[0], c) for c in range(width)]
    for r in range(1, len(rows)):
        cols = range(width - 1, 0, -1) if r % 2 else range(1, width)
        cycle += [rank(rows[r], c) for c in cols]
    cycle += [rank(rows[r], 0) for r in range(len(rows) - 1, 0, -1)]
    return np.array(cycle)
