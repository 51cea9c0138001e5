"""Schedules for one-port topologies (ideal switch, leaf-spine tree) and the physical ring.

Each ``plan_*`` function returns a :class:`Plan` (rows + buffer layout) for ``n`` ranks 0 … n−1 with root 0.
The algorithm names are those of :class:`distcalc.collective.Algorithm`; the spec formula each one is
checked against is in the docstring of :mod:`distcalc.simulate.plans`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from distcalc.simulate import alltoall, recursive, tree
from distcalc.simulate.ring import RingMode, all_gather_rows, reduce_scatter_rows, shard_bundles
from distcalc.simulate.schedule import Op, Rows, concat, sequence


@dataclass
class Plan:
    """Rows of a schedule and its buffer: ``chunks`` chunks (see :mod:`.schedule` for the layout)."""

    rows: Rows
    chunks: int
    extra_nodes: tuple[str, ...] = ()
    notes: dict = field(default_factory=dict)


def shards(n: int, parts: int = 1) -> np.ndarray:
    return np.arange(n * parts).reshape(n, parts)


def all_reduce(rs: Rows) -> Rows:
    """AllReduce = ReduceScatter followed by its time reverse (the AllGather)."""
    return sequence(rs, rs.reversed(Op.COPY))


# --------------------------------------------------------------------------- rings (uni, counter, bucket)
def ring_plan(kind: str, order: np.ndarray, mode: RingMode) -> Plan:
    """RS / AG / AR on the ring ``order`` (ranks in ring order) in ``mode``; 2 parts per shard when halves
    are needed. ``kind`` is ``rs``, ``ag`` or ``ar``."""
    n = len(order)
    parts = 2 if mode in (RingMode.COUNTER, RingMode.BUCKET) else 1
    # bundles are indexed by ring position; the shard at position p belongs to rank order[p]
    bundles = (np.asarray(order)[:, None] * parts + np.arange(parts)[None, :])[None, :, :]
    rs = reduce_scatter_rows(np.asarray(order)[None, :], bundles, mode)
    rows = {"rs": rs, "ag": rs.reversed(Op.COPY) if rs.size else rs, "ar": all_reduce(rs)}[kind]
    return Plan(rows, n * parts)


def butterfly_plan(kind: str, n: int, instances: list[list[np.ndarray]]) -> Plan:
    """RS / AG / AR by concurrent butterfly instances (power-of-two n), instance i on part i of every shard.
    The second (mirrored) instance breaks shortest-path ties the other way round the ring: its port."""
    parts = len(instances)
    rs = concat(*(recursive.butterfly_reduce_scatter_rows(np.arange(n), matchings,
                                                          list(shards(n, parts)[:, i:i + 1]), tie=i % 2)
                  for i, matchings in enumerate(instances)))
    rows = {"rs": rs, "ag": rs.reversed(Op.COPY) if rs.size else rs, "ar": all_reduce(rs)}[kind]
    return Plan(rows, n * parts)


# --------------------------------------------------------------------------- switch family
def recursive_halving_rs(n: int) -> Rows:
    return recursive.shard_reduce_scatter_rows(np.arange(n), shards(n), recursive.xor_matchings)


def direct_rs(n: int) -> Rows:
    """F19: every rank sends shard j straight to rank j, which reduces (one step)."""
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    return Rows.of(0, i, j, j, Op.REDUCE)


def rabenseifner_rs(n: int) -> tuple[Rows, np.ndarray, np.ndarray]:
    p = 1 << recursive.floor_log2(n)
    return recursive.rabenseifner_reduce_scatter_rows(np.arange(n), np.arange(p))


def in_network_plan(n: int, segments: int) -> Plan:
    """F20: segment s goes up to the switch at step s (the switch reduces) and comes down to every GPU at
    step s + 1, pipelined: k + 1 steps of M/k. Node id n is the switch."""
    s = np.arange(segments)[:, None]
    ranks = np.arange(n)[None, :]
    up = Rows.of(s, ranks, n, s, Op.REDUCE)
    down = Rows.of(s + 1, n, ranks, s, Op.COPY)
    return Plan(concat(up, down), segments, ("switch",), {"segments": segments})


def dbt_plan(n: int, segments: int) -> Plan:
    chunks = np.arange(2 * segments).reshape(2, segments, 1)
    return Plan(tree.double_binary_tree_allreduce_rows(np.arange(n), chunks), 2 * segments,
                notes={"segments": segments})


def chain_plan(kind: str, order: np.ndarray, segments: int) -> Plan:
    seg = np.arange(segments)[:, None]
    rows = tree.chain_broadcast_rows(order, seg)
    if kind == "reduce":
        rows = rows.reversed(Op.REDUCE)
    return Plan(rows, segments, notes={"segments": segments})


def switch_plan(kind: str, algorithm: str, n: int, segments: int) -> Plan:
    """Every (collective, algorithm) of the switch and tree topologies."""
    ranks, one = np.arange(n), np.arange(1)
    key = (kind, algorithm)
    if key == ("all-reduce", "ring") or key[1] == "ring" and kind in ("reduce-scatter", "all-gather"):
        return ring_plan({"all-reduce": "ar", "reduce-scatter": "rs", "all-gather": "ag"}[kind], ranks, RingMode.UNI)
    if key == ("all-reduce", "recursive-doubling"):
        return Plan(recursive.recursive_doubling_allreduce_rows(ranks, one), 1)
    if key == ("all-reduce", "rabenseifner"):
        rows, active, _ = rabenseifner_rs(n)
        return Plan(all_reduce(rows), active.size)
    if key == ("all-reduce", "binomial-tree"):
        return Plan(tree.binomial_allreduce_rows(ranks, one), 1)
    if key == ("all-reduce", "double-binary-tree"):
        return dbt_plan(n, segments)
    if key == ("all-reduce", "direct"):
        return Plan(all_reduce(direct_rs(n)), n)
    if key == ("all-reduce", "in-network"):
        return in_network_plan(n, segments)
    if key == ("reduce-scatter", "recursive-halving"):
        return Plan(recursive_halving_rs(n), n)
    if key == ("reduce-scatter", "direct"):
        return Plan(direct_rs(n), n)
    if key == ("all-gather", "recursive-doubling"):
        return Plan(recursive_halving_rs(n).reversed(Op.COPY), n)
    if key == ("all-gather", "bruck"):
        return Plan(recursive.bruck_allgather_rows(ranks, shards(n)), n)
    if key == ("all-gather", "direct"):
        return Plan(direct_rs(n).reversed(Op.COPY), n)
    if key in (("broadcast", "binomial-tree"), ("reduce", "binomial-tree")):
        rows = tree.binomial_broadcast_rows(ranks, one)
        return Plan(rows if kind == "broadcast" else rows.reversed(Op.REDUCE), 1)
    if key == ("broadcast", "scatter-allgather"):
        scatter = tree.binomial_scatter_rows(ranks, shards(n))
        return Plan(sequence(scatter, all_gather_rows(ranks[None, :], shard_bundles(n, 1), RingMode.UNI)), n)
    if algorithm == "pipelined-chain" and kind in ("broadcast", "reduce"):
        return chain_plan(kind, ranks, segments)
    if key == ("reduce", "rabenseifner"):
        rows, active, bundles = rabenseifner_rs(n)
        gather = tree.binomial_scatter_rows(active, bundles).reversed(Op.COPY)
        return Plan(sequence(rows, gather), active.size)
    if algorithm in ("binomial-tree", "linear") and kind in ("gather", "scatter"):
        make = tree.binomial_scatter_rows if algorithm == "binomial-tree" else tree.linear_scatter_rows
        rows = make(ranks, shards(n))
        return Plan(rows if kind == "scatter" else rows.reversed(Op.COPY), n)
    if kind == "all-to-all":
        make = {"pairwise": alltoall.pairwise_rows, "direct": alltoall.direct_rows, "bruck": alltoall.bruck_rows}
        return Plan(make[algorithm](ranks), n * n)
    raise KeyError(key)


def ring_topology_plan(kind: str, algorithm: str, order: np.ndarray, segments: int) -> Plan:
    """Every (collective, algorithm) of a physical ring whose ranks in ring order are ``order``."""
    n = len(order)
    short = {"all-reduce": "ar", "reduce-scatter": "rs", "all-gather": "ag"}.get(kind)
    modes = {"ring": RingMode.UNI, "bidirectional-ring": RingMode.COUNTER, "bucket": RingMode.BUCKET}
    if short and algorithm in modes:
        return ring_plan(short, order, modes[algorithm])
    if short and algorithm == "mirrored-halving":
        return butterfly_plan(short, n, [recursive.xor_matchings(n, largest_first=False),
                                         recursive.mirrored_xor_matchings(n)])
    if short and algorithm == "swing":
        return butterfly_plan(short, n, [recursive.swing_matchings(n), recursive.swing_matchings(n, mirrored=True)])
    if algorithm == "pipelined-chain":
        return chain_plan(kind, np.asarray(order), segments)
    if kind in ("gather", "scatter") and algorithm == "ring":
        rows = tree.ring_gather_rows(np.asarray(order), shards(n), two_sided=True)
        return Plan(rows if kind == "gather" else rows.reversed(Op.COPY), n)
    if kind == "all-to-all":
        return Plan(alltoall.ring_store_forward_rows(np.asarray(order), bidirectional=algorithm != "ring"),
                    n * n * (2 if algorithm != "ring" and n % 2 == 0 and n > 2 else 1))
    raise KeyError((kind, algorithm))
