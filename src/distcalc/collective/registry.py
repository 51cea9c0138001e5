"""Which algorithms apply to each (collective × topology), and the public cost functions.

``collective_cost`` evaluates one algorithm (or ``auto`` = the fastest valid one, as NCCL's tuner does);
``collective_costs`` evaluates every valid algorithm; ``valid_algorithms`` lists them.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from distcalc.collective import fat_tree as ft
from distcalc.collective import flat, grid, nccl_model
from distcalc.collective import hierarchical as hier
from distcalc.collective.types import (
    ALGORITHM_ALIASES, Algorithm, Candidate, CollectiveCost, CollectiveKind, Terms, as_size, broadcast_steps,
    is_pow2, zero_terms,
)
from distcalc.errors import AlgorithmError
from distcalc.topology import Topology, TopologyKind

K = CollectiveKind
A = Algorithm
FlatFn = Callable[[int, Any, float, float], Terms]


_KIND_VALUES = {k.value: k for k in CollectiveKind}


def parse_kind(kind: CollectiveKind | str) -> CollectiveKind:
    """Accept a :class:`CollectiveKind` or a spelling like ``all-reduce``, ``all_reduce``, ``allreduce``."""
    if isinstance(kind, CollectiveKind):
        return kind
    if kind in _KIND_VALUES:
        return _KIND_VALUES[kind]
    text = str(kind).strip().lower().replace("_", "-")
    for member in CollectiveKind:
        if text in (member.value, member.value.replace("-", ""), member.name.lower().replace("_", "-")):
            return member
    valid = ", ".join(k.value for k in CollectiveKind)
    raise AlgorithmError(f"unknown collective {kind!r}: valid collectives are {valid}")


def parse_algorithm(name: Algorithm | str) -> Algorithm | str:
    """An :class:`Algorithm`, or the strings ``auto``/``all``; raises :class:`AlgorithmError` otherwise."""
    if isinstance(name, Algorithm):
        return name
    text = str(name).strip().lower().replace("_", "-")
    if text in ("auto", "all"):
        return text
    if text in ALGORITHM_ALIASES:
        return ALGORITHM_ALIASES[text]
    try:
        return Algorithm(text)
    except ValueError:
        valid = ", ".join(a.value for a in Algorithm if a != Algorithm.P2P)
        raise AlgorithmError(f"unknown algorithm {name!r}: valid names are auto, all, {valid}") from None


# --------------------------------------------------------------------------- per-topology candidate lists
def _flat(topo: Topology, fn: FlatFn, b: float | None = None) -> Callable[[Any], Terms]:
    bandwidth = topo.bandwidth_bytes_per_s if b is None else b
    return lambda m: fn(topo.gpus, m, bandwidth, topo.latency_s)


def _double(cost: Callable[[Any], Terms]) -> Callable[[Any], Terms]:
    return lambda m: flat.double(cost(m))


def _switch(kind: CollectiveKind, topo: Topology) -> list[Candidate]:
    n, t = topo.gpus, topo
    direct_rs = _flat(t, flat.direct_reduce_scatter)
    table: dict[CollectiveKind, list[Candidate]] = {
        K.ALL_REDUCE: [Candidate(A.RING, "F01", _flat(t, flat.ring_allreduce)),
                       Candidate(A.RECURSIVE_DOUBLING, "F13", _flat(t, flat.recursive_doubling_allreduce)),
                       Candidate(A.RABENSEIFNER, "F14", _flat(t, flat.rabenseifner_allreduce)),
                       Candidate(A.BINOMIAL_TREE, "F17", _flat(t, flat.binomial_allreduce)),
                       Candidate(A.DOUBLE_BINARY_TREE, "F18", _flat(t, flat.double_binary_tree_allreduce)),
                       Candidate(A.DIRECT, "F19", _double(direct_rs))],
        K.REDUCE_SCATTER: [Candidate(A.RING, "F04", _flat(t, flat.ring_reduce_scatter)),
                           Candidate(A.RECURSIVE_HALVING, "F15", _flat(t, flat.recursive_halving_reduce_scatter)),
                           Candidate(A.DIRECT, "F19", direct_rs)],
        K.ALL_GATHER: [Candidate(A.RING, "F05", _flat(t, flat.ring_reduce_scatter)),
                       Candidate(A.BRUCK, "F16", _flat(t, flat.bruck_allgather)),
                       Candidate(A.DIRECT, "F19", direct_rs)],
        K.BROADCAST: [Candidate(A.BINOMIAL_TREE, "F08", _flat(t, flat.binomial_broadcast)),
                      Candidate(A.SCATTER_ALLGATHER, "F09", _flat(t, flat.scatter_allgather_broadcast)),
                      Candidate(A.PIPELINED_CHAIN, "F07", _flat(t, flat.uniform_chain))],
        K.REDUCE: [Candidate(A.BINOMIAL_TREE, "F10", _flat(t, flat.binomial_reduce)),
                   Candidate(A.RABENSEIFNER, "F11", _flat(t, flat.rabenseifner_reduce)),
                   Candidate(A.PIPELINED_CHAIN, "F12", _flat(t, flat.uniform_chain))],
        K.GATHER: [Candidate(A.BINOMIAL_TREE, "MPICH-gather", _flat(t, flat.binomial_gather)),
                   Candidate(A.LINEAR, "MPICH-gather-linear", _flat(t, flat.linear_gather))],
        K.SCATTER: [Candidate(A.BINOMIAL_TREE, "MPICH-scatter", _flat(t, flat.binomial_scatter)),
                    Candidate(A.LINEAR, "MPICH-scatter-linear", _flat(t, flat.linear_scatter))],
        K.ALL_TO_ALL: [Candidate(A.PAIRWISE, "F22", _flat(t, flat.pairwise_alltoall)),
                       Candidate(A.DIRECT, "F23", _flat(t, flat.direct_alltoall)),
                       Candidate(A.BRUCK, "F24", _flat(t, flat.bruck_alltoall))],
    }
    out = list(table[kind])
    if kind == K.ALL_GATHER and is_pow2(n):
        out.insert(1, Candidate(A.RECURSIVE_DOUBLING, "F16", _flat(t, flat.bruck_allgather)))
    if kind == K.ALL_REDUCE and topo.kind == TopologyKind.SWITCH and topo.in_network_reduction:
        out.append(Candidate(A.IN_NETWORK, "F20", _flat(t, flat.in_network_allreduce)))
    return out


def _one_dimensional(kind: CollectiveKind, topo: Topology, with_bucket: bool) -> list[Candidate]:
    """Physical ring = 1D torus (two neighbour links per GPU)."""
    t, n = topo, topo.gpus
    rs = [Candidate(A.RING, "F04", _flat(t, flat.ring_reduce_scatter)),
          Candidate(A.BIDIRECTIONAL_RING, "F06", _flat(t, flat.bidirectional_ring_reduce_scatter))]
    ar = [Candidate(A.RING, "F01", _flat(t, flat.ring_allreduce)),
          Candidate(A.BIDIRECTIONAL_RING, "F02", _flat(t, flat.bidirectional_ring_allreduce))]
    if with_bucket:
        rs.append(Candidate(A.BUCKET, "F03", _flat(t, flat.bucket_reduce_scatter)))
        ar.append(Candidate(A.BUCKET, "F03", _flat(t, flat.bucket_allreduce)))
    if is_pow2(n):
        for algorithm, fid, fn in ((A.MIRRORED_HALVING, "F28", flat.mirrored_halving_reduce_scatter),
                                   (A.SWING, "F29", flat.swing_reduce_scatter)):
            rs.append(Candidate(algorithm, fid, _flat(t, fn)))
            ar.append(Candidate(algorithm, fid, _double(_flat(t, fn))))
    table = {
        K.ALL_REDUCE: ar, K.REDUCE_SCATTER: rs, K.ALL_GATHER: [c if c.formula_id != "F04" else
                                                               Candidate(A.RING, "F05", c.cost) for c in rs],
        K.BROADCAST: [Candidate(A.PIPELINED_CHAIN, "F07", _flat(t, flat.uniform_chain))],
        K.REDUCE: [Candidate(A.PIPELINED_CHAIN, "F12", _flat(t, flat.uniform_chain))],
        K.GATHER: [Candidate(A.RING, "ring-gather", _flat(t, flat.ring_gather))],
        K.SCATTER: [Candidate(A.RING, "ring-scatter",
                              lambda m: flat.ring_gather(n, m, t.bandwidth_bytes_per_s, t.latency_s, scatter=True))],
        K.ALL_TO_ALL: [Candidate(A.RING, "F25", _flat(t, flat.ring_alltoall)),
                       Candidate(A.DIRECT, "F26", _flat(t, flat.torus1d_alltoall))],
    }
    return table[kind]


def _grid(kind: CollectiveKind, topo: Topology) -> list[Candidate]:
    dims, wrap, b, a = topo.dims, topo.wraparound, topo.bandwidth_bytes_per_s, topo.latency_s
    three_d = len(dims) == 3
    torus = topo.kind == TopologyKind.TORUS
    gather = kind == K.ALL_GATHER
    seq_rs = lambda m: grid.sequential_reduce_scatter(dims, m, b, a, wrap, gather)  # noqa: E731
    con_rs = lambda m: grid.concurrent_reduce_scatter(dims, m, b, a, wrap, gather)  # noqa: E731
    if torus:
        ids = {"seq_ar": "T10" if three_d else "T01", "con_ar": "T11" if three_d else "T02", "seq_rs": "T03",
               "con_rs": "T12" if three_d else "T04", "a2a": "T13" if three_d else "T05"}
    else:
        ids = {"seq_ar": "T07", "con_ar": "T08", "seq_rs": "T07-RS", "con_rs": "T08-RS", "a2a": "T09"}
    cycle = grid.has_hamiltonian_cycle(dims, wrap)
    out: list[Candidate] = []
    if kind in (K.ALL_REDUCE, K.REDUCE_SCATTER, K.ALL_GATHER):
        is_ar = kind == K.ALL_REDUCE
        if len(dims) == 1 and torus:
            out += [c for c in _one_dimensional(kind, topo, with_bucket=False)]
        elif cycle:
            two_rings = A.BIDIRECTIONAL_RING if torus else A.SNAKE_RING
            ring_id = "F01" if is_ar else ("F04" if kind == K.REDUCE_SCATTER else "F05")
            out.append(Candidate(A.RING, ring_id, _flat(topo, flat.ring_allreduce if is_ar
                                                          else flat.ring_reduce_scatter)))
            out.append(Candidate(two_rings, ("F02" if torus else "T06") if is_ar else "F06",
                                 _flat(topo, flat.bidirectional_ring_allreduce if is_ar
                                       else flat.bidirectional_ring_reduce_scatter)))
        out.append(Candidate(A.DIM_SEQUENTIAL, ids["seq_ar"] if is_ar else ids["seq_rs"],
                             _double(seq_rs) if is_ar else seq_rs))
        out.append(Candidate(A.DIM_CONCURRENT, ids["con_ar"] if is_ar else ids["con_rs"],
                             _double(con_rs) if is_ar else con_rs))
    elif kind in (K.BROADCAST, K.REDUCE):
        out.append(Candidate(A.PIPELINED_CHAIN, "F07" if kind == K.BROADCAST else "F12",
                             _flat(topo, flat.uniform_chain)))
    elif kind in (K.GATHER, K.SCATTER):
        scatter = kind == K.SCATTER
        out.append(Candidate(A.RING, "ring-scatter" if scatter else "ring-gather",
                             lambda m: flat.ring_gather(topo.gpus, m, b, a, two_sided=cycle, scatter=scatter)))
    else:
        if len(dims) == 1 and torus:
            out.append(Candidate(A.RING, "F25", _flat(topo, flat.ring_alltoall)))
        out.append(Candidate(A.DIRECT, ids["a2a"] if len(dims) > 1 or not torus else "F26",
                             lambda m: grid.grid_alltoall(dims, m, b, a, wrap)))
    return out


def _hierarchical(kind: CollectiveKind, topo: Topology) -> list[Candidate]:
    g, n = topo.gpus_per_node or topo.gpus, topo.nodes
    args = (topo.bandwidth_bytes_per_s, topo.latency_s, float(topo.inter_bandwidth_bytes_per_s),
            float(topo.inter_latency_s))

    def h(fn: Callable[..., Terms]) -> Callable[[Any], Terms]:
        return lambda m: fn(g, n, m, *args)

    table = {
        K.ALL_REDUCE: [Candidate(A.HIERARCHICAL, "H01", h(hier.hierarchical_allreduce)),
                       Candidate(A.RAIL_RING, "H02", h(hier.rail_ring_allreduce)),
                       Candidate(A.CHAIN_DBT, "H03", h(hier.chain_dbt_allreduce)),
                       Candidate(A.ASTRA_BASELINE, "H04", h(hier.astra_baseline_allreduce)),
                       Candidate(A.NCCL_RING, "H07", h(nccl_model.nccl_ring_allreduce)),
                       Candidate(A.NCCL_TREE, "H08", h(nccl_model.nccl_tree_allreduce))],
        K.REDUCE_SCATTER: [Candidate(A.HIERARCHICAL, "H05", h(hier.hierarchical_reduce_scatter))],
        K.ALL_GATHER: [Candidate(A.HIERARCHICAL, "H05", h(hier.hierarchical_reduce_scatter))],
        K.BROADCAST: [Candidate(A.HIERARCHICAL, "hier-bcast", h(hier.hierarchical_broadcast)),
                      Candidate(A.PIPELINED_CHAIN, "F07-2level", h(hier.hierarchical_chain))],
        K.REDUCE: [Candidate(A.HIERARCHICAL, "hier-reduce", h(hier.hierarchical_reduce)),
                   Candidate(A.PIPELINED_CHAIN, "F12-2level", h(hier.hierarchical_chain))],
        K.GATHER: [Candidate(A.HIERARCHICAL, "hier-gather", h(hier.hierarchical_gather))],
        K.SCATTER: [Candidate(A.HIERARCHICAL, "hier-scatter", h(hier.hierarchical_scatter))],
        K.ALL_TO_ALL: [Candidate(A.DIRECT, "H06", h(hier.hierarchical_alltoall))],
    }
    out = list(table[kind])
    if kind in (K.REDUCE_SCATTER, K.ALL_GATHER):
        out.append(Candidate(A.RAIL_RING, "H02-RS", lambda m: _half(hier.rail_ring_allreduce(g, n, m, *args))))
    return out


def _half(terms: Terms) -> Terms:
    return Terms(terms.steps // 2, terms.alpha_term_s / 2, terms.bw_term_s / 2, terms.sent_bytes / 2)


_TREE_EXTRA: dict[tuple[CollectiveKind, Algorithm], Callable[[int, int, int, float], float]] = {
    (K.ALL_REDUCE, A.RING): lambda n, l, v, s: ft.ring_extra(2 * (n - 1), n, l, v, s),
    (K.REDUCE_SCATTER, A.RING): lambda n, l, v, s: ft.ring_extra(n - 1, n, l, v, s),
    (K.ALL_GATHER, A.RING): lambda n, l, v, s: ft.ring_extra(n - 1, n, l, v, s),
    (K.ALL_REDUCE, A.RECURSIVE_DOUBLING): ft.doubling_full_extra,
    (K.ALL_REDUCE, A.RABENSEIFNER): lambda n, l, v, s: 2 * ft.rabenseifner_extra(n, l, v, s),
    (K.ALL_REDUCE, A.BINOMIAL_TREE): lambda n, l, v, s: 2 * ft.binomial_extra(n, l, v, s),
    (K.ALL_REDUCE, A.DIRECT): lambda n, l, v, s: 2 * ft.direct_extra(n, l, v, s),
    (K.REDUCE_SCATTER, A.RECURSIVE_HALVING): ft.mpich_halving_extra,
    (K.REDUCE_SCATTER, A.DIRECT): ft.direct_extra,
    (K.ALL_GATHER, A.RECURSIVE_DOUBLING): ft.mpich_halving_extra,
    (K.ALL_GATHER, A.BRUCK): ft.bruck_allgather_extra,
    (K.ALL_GATHER, A.DIRECT): ft.direct_extra,
    (K.BROADCAST, A.BINOMIAL_TREE): ft.binomial_extra,
    (K.REDUCE, A.BINOMIAL_TREE): ft.binomial_extra,
    (K.GATHER, A.BINOMIAL_TREE): ft.binomial_gather_extra,
    (K.SCATTER, A.BINOMIAL_TREE): ft.binomial_gather_extra,
    (K.GATHER, A.LINEAR): ft.linear_gather_extra,
    (K.SCATTER, A.LINEAR): ft.linear_gather_extra,
    (K.ALL_TO_ALL, A.PAIRWISE): ft.pairwise_extra,
    (K.ALL_TO_ALL, A.DIRECT): ft.direct_extra,
    (K.ALL_TO_ALL, A.BRUCK): ft.bruck_alltoall_extra,
}
_TREE_IDS = {(K.ALL_REDUCE, A.RING): "X01", (K.ALL_REDUCE, A.RABENSEIFNER): "X02",
             (K.ALL_TO_ALL, A.DIRECT): "X03"}
_XOR_FAMILY = (A.RECURSIVE_DOUBLING, A.RECURSIVE_HALVING, A.RABENSEIFNER)


def _tree(kind: CollectiveKind, topo: Topology) -> list[Candidate]:
    n, leaf, leaves, s = topo.gpus, topo.gpus_per_node or topo.gpus, topo.nodes, topo.oversubscription
    b = topo.bandwidth_bytes_per_s
    if leaves <= 1:
        return _switch(kind, topo)
    out = []
    for cand in _switch(kind, topo):
        key = (kind, cand.algorithm)
        if key in _TREE_EXTRA and not (cand.algorithm in _XOR_FAMILY and not is_pow2(n)):
            extra = _TREE_EXTRA[key](n, leaf, leaves, s)
            out.append(Candidate(cand.algorithm, _TREE_IDS.get(key, cand.formula_id + "+fat-tree"),
                                 _with_extra(cand.cost, extra, b)))
        elif cand.algorithm == A.PIPELINED_CHAIN:
            slow = b / max(1.0, s / leaf)
            out.append(Candidate(cand.algorithm, cand.formula_id + "+fat-tree",
                                 lambda m: flat.pipelined_chain(m, [(n - leaves, topo.latency_s, b),
                                                                    (leaves - 1, topo.latency_s, slow)])))
    return out


def _with_extra(cost: Callable[[Any], Terms], extra: float, b: float) -> Callable[[Any], Terms]:
    def run(m: Any) -> Terms:
        terms = cost(m)
        return Terms(terms.steps, terms.alpha_term_s, terms.bw_term_s + extra * m / b, terms.sent_bytes)
    return run


def candidates(kind: CollectiveKind | str, topo: Topology) -> list[Candidate]:
    """Every algorithm valid for ``kind`` on ``topo``, in a fixed preference order (ties keep the first).
    Cached on the (immutable) topology."""
    kind = parse_kind(kind)
    cache = topo._cache.setdefault("collective_candidates", {})
    if kind not in cache:
        cache[kind] = _build_candidates(kind, topo)
    return cache[kind]


def _ring(kind: CollectiveKind, topo: Topology) -> list[Candidate]:
    return _one_dimensional(kind, topo, with_bucket=True)


def _mesh_or_torus(kind: CollectiveKind, topo: Topology) -> list[Candidate]:
    return _switch(kind, topo) if topo.gpus == 1 else _grid(kind, topo)  # a 1-GPU mesh/torus has no dimensions


#: The candidate list of each topology family, one entry per :class:`~distcalc.topology.TopologyKind` (a new
#: kind fails here at import until it has one).
FAMILIES: dict[TopologyKind, Callable[[CollectiveKind, Topology], list[Candidate]]] = {
    TopologyKind.RING: _ring, TopologyKind.TREE: _tree, TopologyKind.SWITCH: _switch,
    TopologyKind.HIERARCHICAL: _hierarchical, TopologyKind.MESH: _mesh_or_torus, TopologyKind.TORUS: _mesh_or_torus,
}
assert set(FAMILIES) == set(TopologyKind), "every topology kind has a candidate list"


def _build_candidates(kind: CollectiveKind, topo: Topology) -> list[Candidate]:
    return FAMILIES[topo.kind](kind, topo)


def valid_algorithms(kind: CollectiveKind | str, topo: Topology) -> list[Algorithm]:
    """Names of the algorithms valid for ``kind`` on ``topo``."""
    return [c.algorithm for c in candidates(kind, topo)]


# --------------------------------------------------------------------------- evaluation
def _evaluate(kind: CollectiveKind, cand: Candidate, m: Any, topo: Topology) -> CollectiveCost:
    terms = zero_terms(m) if topo.gpus == 1 else cand.cost(m)
    if isinstance(m, float):  # scalar fast path
        alpha, bw = float(terms.alpha_term_s), float(terms.bw_term_s)
        return CollectiveCost(collective=kind, algorithm=cand.algorithm, size_bytes=m, gpus=topo.gpus,
                              time_s=alpha + bw, latency_term_s=alpha, bandwidth_term_s=bw, steps=int(terms.steps),
                              bytes_sent_per_gpu=float(terms.sent_bytes), formula_id=cand.formula_id)
    steps = broadcast_steps(terms.steps, m)
    alpha = _shaped(terms.alpha_term_s, m)
    bw = _shaped(terms.bw_term_s, m)
    return CollectiveCost(collective=kind, algorithm=cand.algorithm, size_bytes=m, gpus=topo.gpus,
                          time_s=alpha + bw, latency_term_s=alpha, bandwidth_term_s=bw, steps=steps,
                          bytes_sent_per_gpu=_shaped(terms.sent_bytes, m), formula_id=cand.formula_id)


def _shaped(value: Any, m: Any) -> Any:
    if np.ndim(m) == 0:
        return float(value)
    if isinstance(value, np.ndarray) and value.shape == np.shape(m):
        return value.astype(float)  # a new array (a copy, as np.full makes)
    return np.full(np.shape(m), value, dtype=float)  # broadcast into a new array


def _check_size(size_bytes: Any) -> Any:
    m = as_size(size_bytes)
    if isinstance(m, float):
        if not (m >= 0 and m != float("inf")):
            from distcalc.errors import UnitParseError
            raise UnitParseError(f"invalid size_bytes {size_bytes!r}: must be finite and non-negative")
        return m
    if not np.isfinite(m).all() or (m < 0).any():  # m a float array (as_size): the methods, not np.all/np.any
        from distcalc.errors import UnitParseError
        raise UnitParseError(f"invalid size_bytes {size_bytes!r}: must be finite and non-negative")
    return m


def collective_costs(kind: CollectiveKind | str, size_bytes: Any, topo: Topology) -> list[CollectiveCost]:
    """Cost of every valid algorithm, fastest first (for array sizes: in preference order)."""
    kind = parse_kind(kind)
    m = _check_size(size_bytes)
    costs = [_evaluate(kind, c, m, topo) for c in candidates(kind, topo)]
    if np.ndim(m) == 0:
        costs.sort(key=lambda c: c.time_s)  # stable: ties keep preference order
    return costs


def collective_cost(kind: CollectiveKind | str, size_bytes: Any, topo: Topology,
                    algorithm: Algorithm | str = "auto") -> CollectiveCost:
    """Cost of one collective. ``algorithm="auto"`` picks the fastest valid algorithm (``cost.algorithm`` says
    which); with an array of sizes it picks elementwise, ``algorithm`` then being an object array of names.
    Raises :class:`AlgorithmError` if the algorithm is unknown or not valid here (the message lists the
    valid ones)."""
    kind = parse_kind(kind)
    choice = parse_algorithm(algorithm)
    m = _check_size(size_bytes)
    cands = candidates(kind, topo)
    if choice in ("auto", "all"):
        costs = [_evaluate(kind, c, m, topo) for c in cands]
        if np.ndim(m) == 0:
            return min(costs, key=lambda c: c.time_s)
        return _elementwise_min(kind, costs, m, topo)
    for cand in cands:
        if cand.algorithm == choice:
            return _evaluate(kind, cand, m, topo)
    valid = ", ".join(c.algorithm.value for c in cands)
    raise AlgorithmError(f"algorithm {choice.value!r} is not valid for {kind.value} on a {topo.gpus}-GPU "
                         f"{topo.kind.value} topology: valid algorithms are auto, {valid}")


def _elementwise_min(kind: CollectiveKind, costs: list[CollectiveCost], m: Any, topo: Topology) -> CollectiveCost:
    times = np.stack([c.time_s for c in costs])
    best = np.argmin(times, axis=0)

    def pick(field: str) -> Any:  # each element from its fastest candidate (np.choose: one C call, <= 32 choices)
        fields = [np.asarray(getattr(c, field)) for c in costs]
        if len(fields) <= 32:
            return np.choose(best, fields)
        return np.take_along_axis(np.stack(fields), best[None, ...], axis=0)[0]

    names = np.array([c.algorithm for c in costs], dtype=object)[best]
    fids = np.array([c.formula_id for c in costs], dtype=object)[best]
    return CollectiveCost(collective=kind, algorithm=names, size_bytes=m, gpus=topo.gpus, time_s=pick("time_s"),
                          latency_term_s=pick("latency_term_s"), bandwidth_term_s=pick("bandwidth_term_s"),
                          steps=pick("steps"), bytes_sent_per_gpu=pick("bytes_sent_per_gpu"), formula_id=fids)


def collective_latency_and_volume(kind: CollectiveKind | str, size_bytes: Any, topo: Topology,
                                  algorithm: Algorithm | str = "auto") -> CollectiveCost:
    """Seed-tool API: the same as :func:`collective_cost`; read ``.latency`` (s), ``.volume`` (bytes sent per
    GPU) and ``.steps``."""
    return collective_cost(kind, size_bytes, topo, algorithm)
