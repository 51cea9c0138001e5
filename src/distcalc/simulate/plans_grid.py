"""Schedules for torus/mesh grids and two-level (hierarchical) clusters.

A two-level cluster is the 2-axis grid (local GPU, node): rank = local + g·node, axis 0 runs on the NVLink
switch, axis 1 on the NIC rails (one rail per local index).
"""

from __future__ import annotations

import itertools

import numpy as np

from distcalc.collective.pipelined_tree import chain_dbt_trees
from distcalc.simulate import alltoall, tree
from distcalc.simulate.budget import BYTES_PER_TRANSFER, memory_budget_bytes
from distcalc.simulate.plans_flat import Plan, all_reduce, chain_plan, ring_plan, ring_topology_plan, shards
from distcalc.simulate.ring import RingMode, reduce_scatter_rows
from distcalc.simulate.schedule import Op, Rows, concat, sequence
from distcalc.simulate.torus import (
    axis_lines, axis_mode, concurrent_reduce_scatter_rows, needs_halves, sequential_reduce_scatter_rows,
    snake_cycle,
)

SHORT = {"all-reduce": "ar", "reduce-scatter": "rs", "all-gather": "ag"}


def _finish(kind: str, rs: Rows) -> Rows:
    return {"rs": rs, "ag": rs.reversed(Op.COPY) if rs.size else rs, "ar": all_reduce(rs)}[SHORT[kind]]


def snake_path(shape: tuple[int, ...]) -> np.ndarray:
    """A Hamiltonian path of any grid (boustrophedon over the axes, axis 0 fastest)."""
    order = [()]
    for axis in reversed(range(len(shape))):
        nxt = []
        for idx, prefix in enumerate(order):
            values = range(shape[axis]) if idx % 2 == 0 else range(shape[axis] - 1, -1, -1)
            nxt += [prefix + (v,) for v in values]
        order = nxt
    strides = np.cumprod((1,) + tuple(shape[:-1]))
    return np.array([sum(c * strides[a] for a, c in zip(reversed(range(len(shape))), coords)) for coords in order])


def axes_by_bandwidth(shape: tuple[int, ...], wrap: bool) -> list[int]:
    """Axes of size > 1, fastest effective bandwidth first (2B on a wraparound axis ≥ 3, else B): the order
    that minimises Σ (n_i−1)/n_i·D_i/B_i (exchange argument: i before j iff B_i ≥ B_j; docs/spec/collectives.md §4.6)."""
    axes = [a for a, size in enumerate(shape) if size > 1]
    return sorted(axes, key=lambda a: -(2 if wrap and shape[a] >= 3 else 1))


def grid_plan(kind: str, algorithm: str, shape: tuple[int, ...], wrap: bool, has_cycle: bool, segments: int,
              pick=None) -> Plan:
    """Every (collective, algorithm) of a torus (``wrap``) or mesh of ``shape``. ``pick(plans)`` chooses
    among equivalent candidate plans (the dimension-concurrent base orders; All-to-All's schedules, the last
    of them a function that builds it)."""
    n = int(np.prod(shape))
    axes = [a for a, size in enumerate(shape) if size > 1]
    one_ring = ("ring", "bidirectional-ring", "bucket", "mirrored-halving", "swing")
    if wrap and len(axes) == 1 and (kind in SHORT and algorithm in one_ring or kind == "all-to-all" and algorithm == "ring"):
        return ring_topology_plan(kind, algorithm, axis_lines(shape, axes[0])[0], segments)
    modes = {a: axis_mode(shape[a], wrap) for a in axes}
    if kind in SHORT:
        if algorithm in ("ring", "bidirectional-ring", "snake-ring"):
            mode = RingMode.UNI if algorithm == "ring" else RingMode.COUNTER
            return ring_plan(SHORT[kind], snake_cycle(shape), mode)
        halves = needs_halves(shape, modes)
        if algorithm == "dim-sequential":
            rs = sequential_reduce_scatter_rows(shape, axes_by_bandwidth(shape, wrap), modes, halves)
            return Plan(_finish(kind, rs), n * halves)
        if algorithm == "dim-concurrent":
            k = len(axes)
            bases = [list(p) for p in itertools.permutations(axes) if p[0] == axes[0]] or [axes]
            plans = [Plan(_finish(kind, concurrent_reduce_scatter_rows(shape, base, modes, halves)), n * k * halves,
                          notes={"base_order": base}) for base in bases]
            return plans[0] if pick is None or len(plans) == 1 else pick(plans)
    if algorithm == "pipelined-chain":
        return chain_plan(kind, snake_path(shape), segments)
    if kind in ("gather", "scatter"):
        order = snake_cycle(shape) if has_cycle else snake_path(shape)
        rows = tree.ring_gather_rows(order, shards(n)[order], two_sided=has_cycle)
        return Plan(rows if kind == "gather" else rows.reversed(Op.COPY), n)
    if kind == "all-to-all" and algorithm == "direct":
        plans = []
        for synchronous in (True, False):
            rows, parts = alltoall.grid_rows(shape, wrap, synchronous)
            plans.append(Plan(rows, n * n * parts, notes={"phase_synchronous": synchronous}))
        if not wrap:  # mesh lines: each phase staged by distance reaches the line's bisection load (T09)
            for synchronous in (True, False):
                rows, parts = alltoall.grid_rows(shape, wrap, synchronous, staged=True)
                plans.append(Plan(rows, n * n * parts, notes={"phase_synchronous": synchronous,
                                                              "distance_staged": True}))
        # unequal axes: every block's moves spread over all Σ hops_i steps reach T05/T09/T13 where the others
        # do not; S parts per block, so built last, only if ``pick`` gets that far (a function) and only where
        # its rows fit the simulator's memory budget
        if len(set(shape[a] for a in axes)) > 1 and (alltoall.slot_rotated_transfers(shape, wrap)
                                                     * BYTES_PER_TRANSFER <= memory_budget_bytes()):
            def slot_rotated() -> Plan:
                rows, parts = alltoall.slot_rotated_rows(shape, wrap)
                return Plan(rows, n * n * parts, notes={"slot_rotated": True})
            plans.append(slot_rotated)
        return plans[0] if pick is None else pick(plans)
    raise KeyError((kind, algorithm))


# --------------------------------------------------------------------------- two-level clusters
def rail_ring_orders(g: int, nodes: int) -> tuple[np.ndarray, bool]:
    """g rings over all N GPUs, ring k entering node i at local k + c_i and leaving at local k + c_{i+1}
    (mod g) to the same local index of the next node, so every inter-node hop stays on one rail and every
    GPU is the exit of exactly one ring (NCCL-style rail-aligned rings). Needs increments d_i = c_{i+1} − c_i
    ≠ 0 mod g with Σ d_i ≡ 0; impossible for g = 2 with an odd node count (returns rail_aligned = False and
    closes the last hop across rails)."""
    if g == 1 or nodes == 1:
        base = np.arange(g * nodes)
        return np.stack([np.roll(base, -k) for k in range(g)]), True
    d = [1] * nodes
    d[-1] = (-(nodes - 1)) % g
    if d[-1] == 0 and g >= 3:
        d[-2], d[-1] = 2, (-(nodes - 1) - 1) % g
    aligned = all(x % g for x in d) and sum(d) % g == 0
    if not aligned:
        d[-1] = 1
    c = np.concatenate([[0], np.cumsum(d)])
    rings = []
    for k in range(g):
        order = []
        for i in range(nodes):
            entry, exit_ = (k + c[i]) % g, (k + c[i + 1]) % g
            middle = [x for x in range(g) if x not in (entry, exit_)]
            order += [i * g + x for x in [entry] + middle + ([exit_] if exit_ != entry else [])]
        rings.append(order)
    return np.array(rings), aligned


def rail_ring_rs(g: int, nodes: int) -> tuple[Rows, int, bool]:
    """H02: ring k carries part k of every shard (chunk = owner·g + k)."""
    rings, aligned = rail_ring_orders(g, nodes)
    bundles = rings[:, :, None] * g + np.arange(g)[:, None, None]
    return reduce_scatter_rows(rings, bundles, RingMode.UNI), g * nodes * g, aligned


def rail_ring_channels(chunk: np.ndarray, g: int) -> np.ndarray:
    """The ring (NCCL channel) of every row of an H02 schedule: chunk = owner·g + k rides ring k
    (:func:`rail_ring_rs`; the AllGather half is its reversal on the same chunks)."""
    return np.asarray(chunk) % g


def hierarchical_plan(kind: str, algorithm: str, g: int, nodes: int, segments: int) -> Plan:
    """Every (collective, algorithm) of a two-level cluster with g GPUs per node."""
    n, shape = g * nodes, (g, nodes)
    uni = {0: RingMode.UNI, 1: RingMode.UNI}
    locals_, rails = axis_lines(shape, 0), axis_lines(shape, 1)  # (nodes, g), (g, nodes)
    if kind in SHORT and algorithm == "hierarchical":  # H01 / H05
        return Plan(_finish(kind, sequential_reduce_scatter_rows(shape, [0, 1], uni, 1)), n)
    if kind in SHORT and algorithm in ("rail-ring", "nccl-ring"):  # H02 (NCCL model: same schedule)
        rs, chunks, aligned = rail_ring_rs(g, nodes)
        return Plan(_finish(kind, rs), chunks, notes={"rail_aligned": aligned, "ring_channels": g})
    if kind == "all-reduce" and algorithm == "astra-baseline":  # H04: full AR per dimension
        c = np.arange(n)
        intra = reduce_scatter_rows(locals_, np.broadcast_to(c.reshape(g, nodes), (nodes, g, nodes)), RingMode.UNI)
        inter = reduce_scatter_rows(rails, np.broadcast_to(c.reshape(nodes, g), (g, nodes, g)), RingMode.UNI)
        return Plan(sequence(all_reduce(intra), all_reduce(inter)), n)
    if kind == "all-reduce" and algorithm in ("chain-dbt", "nccl-tree"):  # H03
        return Plan(_chain_dbt_rows(g, nodes, segments), 2 * g * segments, notes={"segments": segments, "channels": g})
    if algorithm == "pipelined-chain":  # node by node, snaking so every inter-node hop stays on a rail
        order = np.concatenate([i * g + (np.arange(g) if i % 2 == 0 else np.arange(g)[::-1]) for i in range(nodes)])
        return chain_plan(kind, order, segments)
    if kind in ("broadcast", "reduce") and algorithm == "hierarchical":
        scatter = tree.binomial_scatter_rows(locals_[0], shards(g))
        rail_bcast = concat(*(tree.binomial_broadcast_rows(rails[l], np.array([l])) for l in range(g)))
        bundles = np.broadcast_to(shards(g)[None], (nodes, g, 1))
        intra_rs = reduce_scatter_rows(locals_, bundles, RingMode.UNI)
        if kind == "broadcast":
            return Plan(sequence(scatter, rail_bcast, intra_rs.reversed(Op.COPY)), g)
        return Plan(sequence(intra_rs, rail_bcast.reversed(Op.REDUCE), scatter.reversed(Op.COPY)), g)
    if kind in ("gather", "scatter") and algorithm == "hierarchical":
        per_rail = concat(*(tree.binomial_scatter_rows(rails[l], shards(n)[rails[l]]) for l in range(g)))
        # inside the root's node, local l holds the blocks of rail l
        in_node = tree.binomial_scatter_rows(locals_[0], rails.astype(np.int64))
        rows = sequence(in_node, per_rail)
        return Plan(rows if kind == "scatter" else rows.reversed(Op.COPY), n)
    if kind == "all-to-all" and algorithm == "direct":
        return Plan(alltoall.direct_rows(np.arange(n)), n * n)
    raise KeyError((kind, algorithm))


def _chain_dbt_rows(g: int, nodes: int, segments: int) -> Rows:
    """H03 (NCCL Tree): g channels, one per NIC rail, each on M/g — intra-node chains joined over the rail by
    NCCL's double binary tree over nodes (:func:`~distcalc.collective.pipelined_tree.chain_dbt_trees`), half
    of the channel's 2k chunks on each tree (both on one tree when nodes ≤ 2), all pipelined in k segments."""
    trees = chain_dbt_trees(g, nodes)
    per_channel = len(trees) // g
    seg = np.arange(segments)
    out = []
    for i, t in enumerate(trees):
        base = (i // per_channel) * 2 * segments
        if per_channel == 1:  # one inter-node tree (a single link pair) carries the whole channel
            chunks = base + np.stack([seg, segments + seg], axis=1)
        else:
            chunks = base + (i % per_channel) * segments + seg[:, None]
        out.append(tree.pipelined_tree_allreduce_rows(np.arange(g * nodes), t.parent, chunks))
    return concat(*out)
