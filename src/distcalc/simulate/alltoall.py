"""All-to-All schedules. Block (i, j) is what rank i sends to rank j; chunk ``(i·N + j)·p + q`` is its part q.

* pairwise exchange: step s (1 … N−1) rank r sends block (r, r+s) to r+s (MPICH ``alltoall.c``, F22);
* direct: every block at once (NCCL grouped send/recv, F23; H06 on a two-level cluster);
* Bruck: block (i, j) with d = j − i mod N moves 2^k forward at every step k whose bit is set in d
  (MPICH ``alltoall.c`` Bruck, F24);
* store-and-forward along lines and rings: every block moves one hop per step towards its destination,
  all blocks at once: the unidirectional ring (ASTRA-sim Ring.cc, F25), the shortest-path 1D torus with the
  antipodal block split in halves one each way (F26), and torus/mesh dimension-ordered routing with the
  blocks split in k parts whose dimension orders are rotated, so every phase keeps all dimensions busy
  (T05/T09/T13);
* distance-staged mesh phases: along a mesh line a piece is sent once, cut-through, on the step given by its
  distance, so every step is bound by the middle link and a phase carries exactly the line's bisection load
  (:func:`staged_line_load`): T09 exactly on lines and meshes of equal dimensions.
"""

from __future__ import annotations

import numpy as np

from distcalc.simulate.schedule import Op, Rows, concat


def block_chunks(n: int, parts: int, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Chunk ids (…, parts) of blocks (i, j)."""
    base = (np.asarray(i) * n + np.asarray(j)) * parts
    return base[..., None] + np.arange(parts)


def pairwise_rows(ranks: np.ndarray, parts: int = 1) -> Rows:
    ranks, n = np.asarray(ranks), len(ranks)
    r = np.arange(n)
    out = [Rows.of(s - 1, ranks[r][:, None], ranks[(r + s) % n][:, None],
                   block_chunks(n, parts, ranks[r], ranks[(r + s) % n]), Op.COPY) for s in range(1, n)]
    return concat(*out)


def direct_rows(ranks: np.ndarray, parts: int = 1) -> Rows:
    ranks, n = np.asarray(ranks), len(ranks)
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    return Rows.of(0, ranks[i][:, None], ranks[j][:, None], block_chunks(n, parts, ranks[i], ranks[j]), Op.COPY)


def bruck_rows(ranks: np.ndarray, parts: int = 1) -> Rows:
    ranks, n = np.asarray(ranks), len(ranks)
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    d = (j - i) % n
    out, k = [], 0
    while (1 << k) < n:
        bit = 1 << k
        moving = (d & bit) != 0
        src = (i[moving] + (d[moving] & (bit - 1))) % n
        out.append(Rows.of(k, ranks[src][:, None], ranks[(src + bit) % n][:, None],
                           block_chunks(n, parts, ranks[i[moving]], ranks[j[moving]]), Op.COPY))
        k += 1
    return concat(*out)


def line_moves(start: np.ndarray, direction: np.ndarray, hops: np.ndarray, size: int, wrap: bool,
               step0=0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Hop-by-hop moves of items along one axis: item m is at ``start + direction·t`` and moves at step
    ``step0 (+ [m] if an array) + t`` for t < hops[m]. Returns (item, step, from, to coordinate) per move."""
    total = int(hops.sum())
    item = np.repeat(np.arange(hops.size), hops)
    t = np.arange(total) - np.repeat(np.cumsum(hops) - hops, hops)
    frm = start[item] + direction[item] * t
    to = frm + direction[item]
    if wrap:
        frm, to = frm % size, to % size
    first = step0[item] if np.ndim(step0) else step0
    return item, first + t, frm, to


def ring_store_forward_rows(ranks: np.ndarray, bidirectional: bool) -> Rows:
    """F25 (unidirectional: every block goes clockwise d hops) or F26 (shortest direction; for even N the
    block at distance N/2 is split, half each way). Blocks of 2 parts when split halves are needed."""
    ranks, n = np.asarray(ranks), len(ranks)
    parts = 2 if (bidirectional and n % 2 == 0 and n > 2) else 1
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    d = (j - i) % n
    items_i, items_j, items_q, direction, hops = [], [], [], [], []
    for q in range(parts):
        if not bidirectional:
            dirn, h = np.ones_like(d), d
        else:
            cw = (2 * d < n) | ((2 * d == n) & (q == 0))
            dirn, h = np.where(cw, 1, -1), np.where(cw, d, n - d)
        items_i.append(i), items_j.append(j), items_q.append(np.full_like(i, q))
        direction.append(dirn), hops.append(h)
    i, j, q = np.concatenate(items_i), np.concatenate(items_j), np.concatenate(items_q)
    direction, hops = np.concatenate(direction), np.concatenate(hops)
    item, step, frm, to = line_moves(i, direction, hops, n, wrap=True)
    chunk = (ranks[i[item]] * n + ranks[j[item]]) * parts + q[item]
    return Rows.of(step, ranks[frm], ranks[to], chunk, Op.COPY)


def grid_rows(shape: tuple[int, ...], wrap: bool, synchronous: bool = True,
              staged: bool = False) -> tuple[Rows, int]:
    """Dimension-ordered store-and-forward on a torus/mesh of ``shape`` (rank = x0 + n0·(x1 + …)).

    The blocks are split in k parts (k = dimensions of size > 1), part p visiting the dimensions in the
    order rotated by p. ``synchronous``: a phase moves every part along one dimension, hop by hop, and lasts
    as long as the longest move; otherwise every piece goes on to its next dimension as soon as it is done
    with the previous one. On a torus the antipodal distance of an even dimension is split again, half each
    way. ``staged`` (synchronous phases only): inside a phase a piece is not forwarded hop by hop but sent
    once, straight to its coordinate over the line (a cut-through route), on the phase's step d − 1 for a
    distance d; see :func:`staged_line_load`. Returns (rows, parts per block)."""
    dims = [a for a, size in enumerate(shape) if size > 1]
    n = int(np.prod(shape))
    k = max(len(dims), 1)
    halves = 2 if wrap and any(shape[a] % 2 == 0 and shape[a] > 2 for a in dims) else 1
    parts = k * halves
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    coords_of = np.array(np.unravel_index(np.arange(n), shape[::-1]))[::-1]  # (ndim, N): x0 first
    strides = np.cumprod((1,) + tuple(shape[:-1]))
    position = {key: coords_of[:, i].copy() for key in np.ndindex(k, halves)}
    clock = {key: np.zeros(i.size, dtype=np.int64) for key in np.ndindex(k, halves)}
    out, phase_start = [], 0
    for phase in range(k):
        phase_len = 0
        for part, half in np.ndindex(k, halves):
            axis = dims[(part + phase) % k]
            size, pos = shape[axis], position[(part, half)]
            frm_c, dst_c = pos[axis], coords_of[axis, j]
            fwd = (dst_c - frm_c) % size if wrap else dst_c - frm_c
            if wrap:
                cw = (2 * fwd < size) | ((2 * fwd == size) & (half == 0))
                direction, hops = np.where(cw, 1, -1), np.where(cw, fwd, size - fwd)
            else:
                direction, hops = np.sign(fwd), np.abs(fwd)
            start = phase_start if synchronous else clock[(part, half)]
            if staged:  # one cut-through transfer per piece, at the step given by its distance
                item = np.flatnonzero(hops)
                step = (start[item] if np.ndim(start) else start) + hops[item] - 1
                a, b = frm_c[item], dst_c[item]
            else:
                item, step, a, b = line_moves(frm_c, direction, hops, size, wrap, start)
            base = (pos.T[item] * strides).sum(axis=1) - pos[axis, item] * strides[axis]
            chunk = (i[item] * n + j[item]) * parts + part * halves + half
            out.append(Rows.of(step, base + a * strides[axis], base + b * strides[axis], chunk, Op.COPY))
            pos[axis] = dst_c
            clock[(part, half)] += size - 1 if staged else hops
            phase_len = max(phase_len, int(hops.max()) if hops.size else 0)
        phase_start += phase_len
    return concat(*out), parts


def staged_line_load(n: int) -> int:
    """Blocks on the busiest link of a line of ``n`` GPUs, summed over the distance-staged steps of one
    All-to-All phase (step d = 1 … n − 1 sends every block of distance d, cut-through).

    Link x → x+1 carries at step d the pairs (i, i + d) with i ≤ x < i + d: min(d, x + 1, n − 1 − x, n − d)
    of them, largest at the middle link, min(d, n − d). Summed over d: Σ min(d, n − d) = ⌊n/2⌋⌈n/2⌉, the
    bisection load of the line (spec T09: L = ⌊n/2⌋⌈n/2⌉/n blocks of M per GPU), so every step is bound by the
    middle link and the phase reaches the bisection bound in n − 1 steps. Hop by hop (``line_moves``) the
    end link of the line carries all n − 1 blocks of its GPU in the first step: Σ over steps of the busiest
    link is n(n − 1)/2 blocks, up to twice the bisection load. Source: [D]; the bisection argument of
    Dally & Towles, *Principles and Practices of Interconnection Networks*, 2004, §3.3 (channel load of a
    uniform traffic pattern)."""
    return sum(min(d, n - d) for d in range(1, n))



def slot_rotated_transfers(shape: tuple[int, ...], wrap: bool) -> int:
    """Rows of :func:`slot_rotated_rows`, counted without building them: S parts of every block (of every
    half), each making the block's moves. From one source, N/n_a destinations lie at every axis-a offset x;
    a torus block makes min(x, n_a − x) hops along a, a mesh block one cut-through move where x ≠ 0."""
    axes = [a for a, size in enumerate(shape) if size > 1]
    n = int(np.prod(shape))
    halves = 2 if wrap and any(shape[a] % 2 == 0 and shape[a] > 2 for a in axes) else 1
    slots = max(sum(shape[a] // 2 if wrap and shape[a] >= 3 else shape[a] - 1 for a in axes), 1)
    moves = 0
    for a in axes:
        size = shape[a]
        x = np.arange(size)
        per_source = int(np.minimum(x, size - x).sum()) if wrap else size - 1
        moves += n * (n // size) * per_source
    return moves * halves * slots


def slot_rotated_rows(shape: tuple[int, ...], wrap: bool) -> tuple[Rows, int]:
    """Shortest-path All-to-All whose moves are spread evenly over S = Σ_i hops_i steps (torus hops_i =
    ⌊n_i/2⌋, mesh n_i − 1; rank = x0 + n0·(x1 + …)), in S parts per block.

    A block's move string has one symbol per step: on a torus its hops (h_a along axis a, one direction;
    the antipodal distance of an even axis split in halves, one each way), axes in order, padded with idle
    steps to length S; on a mesh the labels (a, d), d = 1 … n_a − 1, of every axis's distance-staged line
    phase (:func:`staged_line_load`: a piece at distance d along a is sent once, cut-through, at label
    (a, d)). Part r runs the string rotated by r. Any order of the moves is a shortest route to the same GPU
    (the hops commute), so every part arrives in S steps; over the S parts every symbol falls on every step
    once, so each step carries 1/S of every symbol's load:

    * torus (vertex-transitive: summed over sources, the k-th axis-a hop of a block type crosses every
      axis-a link once): every link of axis a carries L_a/S of its load on every step;
    * mesh: for any other axis b a piece sits on the line of its destination's b coordinate if its (b, d_b)
      label came earlier and of its source's otherwise, and d_b = |x_b − c_b| picks exactly one of the two
      for every x_b, so every line of axis a carries at label (a, d) the staged pattern of one phase: its
      middle link carries L_a/S on every step, the other links less.

    The busiest link is busy on every step with the same bytes, so the schedule takes α·S + max_a L_a·M/B
    in both timing modes: spec T05/T13 (torus) and T09 (mesh), the bisection bound, exactly. Source: [D];
    the rotation of the dimension order is the dimension-concurrent split (scaling-book sharding.md) taken
    to the step level."""
    axes = [a for a, size in enumerate(shape) if size > 1]
    n = int(np.prod(shape))
    halves = 2 if wrap and any(shape[a] % 2 == 0 and shape[a] > 2 for a in axes) else 1
    hops_max = [shape[a] // 2 if wrap and shape[a] >= 3 else shape[a] - 1 for a in axes]
    slots = max(sum(hops_max), 1)
    parts = slots * halves
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    coords_of = np.array(np.unravel_index(np.arange(n), shape[::-1]))[::-1]  # (ndim, N): x0 first
    strides = np.cumprod((1,) + tuple(shape[:-1]))[:, None]
    # the labels of the string: (axis position, distance) on a mesh; (axis position, −1: any hop) on a torus
    label_axis = np.repeat(np.arange(len(axes)), hops_max)
    label_distance = np.concatenate([np.arange(1, h + 1) for h in hops_max]) if axes else np.zeros(0, int)
    out = []
    for half in range(halves):
        step_dir = np.zeros((len(axes), i.size), dtype=np.int64)
        hops = np.zeros((len(axes), i.size), dtype=np.int64)
        for pos, a in enumerate(axes):
            size = shape[a]
            fwd = (coords_of[a, j] - coords_of[a, i]) % size if wrap else coords_of[a, j] - coords_of[a, i]
            if wrap:
                cw = (2 * fwd < size) | ((2 * fwd == size) & (half == 0))
                step_dir[pos], hops[pos] = np.where(cw, 1, -1), np.where(cw, fwd, size - fwd)
            else:
                step_dir[pos], hops[pos] = np.sign(fwd), np.abs(fwd)
        # torus: the block's k-th hop symbol along an axis is the label of that axis with distance ≤ its hops
        for r in range(slots):
            position = coords_of[:, i].copy()
            chunk = (i * n + j) * parts + half * slots + r
            for s in range(slots):
                label = (s + r) % slots
                pos, d = int(label_axis[label]), int(label_distance[label])
                axis = axes[pos]
                moving = np.flatnonzero(hops[pos] >= d if wrap else hops[pos] == d)
                frm = (position[:, moving] * strides).sum(axis=0)
                if wrap:  # one hop
                    position[axis, moving] = (position[axis, moving] + step_dir[pos, moving]) % shape[axis]
                else:  # cut-through to the destination's coordinate
                    position[axis, moving] = coords_of[axis, j[moving]]
                to = (position[:, moving] * strides).sum(axis=0)
                out.append(Rows.of(s, frm, to, chunk[moving], Op.COPY))
    return concat(*out), parts
