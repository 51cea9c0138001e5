"""Agreement of the executed schedules with the analytic collective library (issue 3, "Must show").

For every (topology, collective, algorithm) of :func:`distcalc.collective.valid_algorithms` over a sweep of N
(1 … 64, primes and non-powers of two, torus/mesh shapes with dimensions of 2 and 3, two-level clusters, fat
trees), the simulator runs the schedule on random data and must verify the collective's result. Then:

* exact formulas: simulated steps, latency term, bandwidth term, total time and bytes sent per GPU equal the
  analytic ones to a relative 1e-9;
* deliberate approximations of the analytic side (REFERENCES.md, Simulator, "approximations"): the
  simulated time is never below the analytic one, and the documented exact relation holds where there is one;
* NCCL's tuning model (nccl-ring / nccl-tree) is not a schedule: only the schedule is verified.

Pipelined tree algorithms (double binary tree, chain + DBT, in-network reduction) are compared with their
finite-k form (:mod:`distcalc.collective.pipelined_tree`, at the schedule's k) exactly, and never run below
the k → ∞ spec formula (F18/H03/F20) that form converges to.

Event-driven timing (``mode="event"``, issue 18: chunk transfers as events per link, no step barrier) of the
same schedules: every exact case stays exact (the pipelined trees' data dependencies keep them level-synchronous);
the pipelined chains whose step timing pays the slowest hop on every step (two hop classes) become exact, since
the formula is the flow-shop makespan the events produce; All-to-All on every torus and mesh is exact in both
timing modes (distance-staged phases reach T09's bisection load on equal dimensions; on unequal dimensions the
slot-rotated schedule spreads every block's moves over all Σ hops_i steps and reaches T05/T09/T13). What is
left (:func:`event_classify`) is checked as measured.
"""

from __future__ import annotations

import math

import pytest

from distcalc.collective import CollectiveKind, valid_algorithms
from distcalc.collective.grid import concurrent_reduce_scatter_overlapped
from distcalc.simulate import simulate, time_routed
from distcalc.topology import TopologyKind, make_topology

M = float(1 << 20)
REL = 1e-9
ALPHA, BW = 5e-6, 100e9
HIER = dict(bandwidth_bytes_per_s=450e9, latency_s=1e-6, inter_bandwidth_bytes_per_s=50e9, inter_latency_s=5e-6)

FLAT_N = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 24, 31, 32, 64]
RING_N = [1, 2, 3, 4, 5, 6, 7, 8, 11, 16, 31, 64]
GRID_SHAPES = [(2, 2), (2, 3), (3, 3), (4, 2), (3, 4), (4, 4), (5, 3), (8, 8), (2, 2, 2), (3, 3, 2), (4, 3, 2),
               (3, 3, 3), (4, 4, 4), (2,), (7,), (13,)]
HIER_SHAPES = [(2, 2), (4, 2), (2, 3), (4, 3), (3, 4), (8, 1), (1, 4), (8, 2), (8, 8)]
TREES = [(8, 4, 1.0), (16, 4, 1.0), (12, 4, 2.0), (16, 4, 8.0), (6, 2, 3.0), (64, 8, 4.0)]


def _topologies():
    for n in FLAT_N:
        yield f"switch-{n}", ("switch", n, {})
    for n in (2, 3, 8, 64):
        yield f"switch-nvls-{n}", ("switch", n, {"in_network_reduction": True})
    for n in RING_N:
        yield f"ring-{n}", ("ring", n, {})
    for shape in GRID_SHAPES:
        for kind in ("torus", "mesh"):
            yield f"{kind}-{'x'.join(map(str, shape))}", (kind, math.prod(shape), {"shape": shape})
    for g, nodes in HIER_SHAPES:
        yield f"hier-{g}x{nodes}", ("hierarchical", g * nodes, {"gpus_per_node": g, **HIER})
    for n, leaf, s in TREES:
        yield f"tree-{n}-leaf{leaf}-s{s:g}", ("tree", n, {"gpus_per_node": leaf, "oversubscription": s})


def _build(spec):
    kind, gpus, extra = spec
    params = {} if kind == "hierarchical" else {"bandwidth_bytes_per_s": BW, "latency_s": ALPHA}
    return make_topology(kind, gpus, **params, **extra)


def _cases():
    for name, spec in _topologies():
        topo = _build(spec)
        for kind in CollectiveKind:
            for algorithm in valid_algorithms(kind, topo):
                yield pytest.param(spec, kind.value, algorithm.value, id=f"{name}-{kind.value}-{algorithm.value}")


CASES = list(_cases())

# Every analytic-side disagreement the simulator found was resolved (REFERENCES.md, Simulator, "formula
# corrections found by the simulator"); what remains are byte-count conventions the library keeps because
# reference_cases.csv pins them. The simulator counts every byte a GPU injects (forwarded blocks included) and
# the true busiest sender; the test pins both numbers.
CONVENTION_BYTES = {
    ("switch", "reduce", "rabenseifner"), ("tree", "reduce", "rabenseifner"),
    ("ring", "all-to-all", "direct"), ("torus", "all-to-all", "direct"), ("mesh", "all-to-all", "direct"),
    ("mesh", "all-reduce", "dim-sequential"), ("mesh", "all-reduce", "dim-concurrent"),
}


def _own_data_bytes(schedule) -> float:
    """All-to-All: the bytes of its own blocks a GPU injects (the library's convention for F26/T05/T09/T13)."""
    import numpy as np

    sender = (schedule.chunk // schedule.parts) // schedule.gpus
    own = np.bincount(schedule.src[schedule.src == sender], minlength=schedule.gpus)
    return float(own.max()) * schedule.chunk_bytes


def _forwarded_alltoall_bytes(topo) -> float:
    """Store-and-forward All-to-All: GPU i injects Σ_j hops(i, j) blocks of M/N (own and forwarded). On a
    mesh the blocks cross each line in one cut-through transfer (distance-staged phases), so a GPU injects
    (n_i − 1)/n_i of the data it holds in every phase: Σ_i (n_i − 1)/n_i·M."""
    if topo.kind == TopologyKind.MESH:
        return sum((d - 1) / d for d in topo.dims if d > 1) * M
    n = topo.gpus
    return max(sum(topo.hop_distance(i, j) for j in range(n) if j != i) for i in range(n)) * M / n


def classify(topo, kind: str, algorithm: str) -> str:
    """'exact', 'approx' (simulated ≥ analytic, documented), or 'model' (NCCL's fitted model)."""
    dims = topo.dims
    if algorithm in ("nccl-ring", "nccl-tree"):
        return "model"
    grid = topo.kind in (TopologyKind.MESH, TopologyKind.TORUS) and len(dims) > 1
    if grid and len(set(dims)) > 1 and algorithm == "dim-concurrent":
        return "approx"  # phase-max formulas on unequal dimensions (T04/T12/T08)
    two_level = topo.kind == TopologyKind.HIERARCHICAL and topo.nodes > 1 and (topo.gpus_per_node or 1) > 1
    if two_level and algorithm in ("rail-ring", "pipelined-chain"):
        return "approx"  # step-synchronous α2 on every step; two hop classes in one pipeline
    if topo.kind == TopologyKind.TREE and algorithm == "pipelined-chain" and topo.oversubscription > topo.gpus_per_node:
        return "approx"  # two hop classes (leaf link, slower uplink) in one pipeline
    return "exact"


def event_classify(topo, kind: str, algorithm: str) -> str:
    """Event-driven timing: 'exact', 'model', or 'overlapped' (REFERENCES.md, Simulator, "event-driven
    mode"); All-to-All on grids of unequal dimensions is exact (the slot-rotated schedule reaches T05/T09/T13);
    rail rings are 'exact' against their channel form H02-channels (one chunk's walk, phases·n network α, at
    1 MiB; H02, with NCCL's older count 2(n − 1), is the spec beside it and below); and 'overlapped'
    (dimension-concurrent on unequal dimensions: the simulation's analytic side is the barrier-free form
    :func:`~distcalc.collective.grid.concurrent_reduce_scatter_overlapped`, exact in time, α and bandwidth;
    its step count is the critical path's, and the phase-synchronous T04/T08/T12 the library keeps is above)."""
    category = classify(topo, kind, algorithm)
    if category != "approx":
        return category
    if algorithm == "rail-ring":
        return "exact"  # one channel per ring: the schedule's own form H02-channels (H02 is the spec beside it)
    if algorithm == "pipelined-chain":
        return "exact"  # the flow-shop makespan Σ t_h + (k − 1)·max t_h of the formula
    return "overlapped"


@pytest.mark.parametrize("spec,kind,algorithm", CASES)
def test_simulated_cost_agrees_with_analytic(spec, kind, algorithm):
    topo = _build(spec)
    result = simulate(kind, M, topo, algorithm, elements_per_chunk=2, seed=len(CASES) % 7)
    assert result.verified, result.execution.message
    analytic = result.analytic
    category = classify(topo, kind, algorithm)
    key = (topo.kind.value, kind, algorithm)
    if category == "model":
        return
    if category == "approx":
        assert result.time_s >= analytic.time_s * (1 - REL)
        if algorithm == "rail-ring":  # bandwidth and steps exact; latency α2 on every step
            assert result.steps == analytic.steps
            assert result.timing.bandwidth_term_s == pytest.approx(analytic.bandwidth_term_s, rel=REL)
            assert result.timing.latency_term_s == pytest.approx(result.steps * HIER["inter_latency_s"], rel=REL)
        return
    _assert_exact(result, topo, kind, algorithm)
    if result.spec is not None:  # a finite-k pipelined tree never beats its k → ∞ spec formula
        assert result.time_s >= result.spec.time_s * (1 - REL)
        assert result.spec.formula_id in ("F18", "H03", "F20")
        assert analytic.formula_id == result.spec.formula_id + "-k"


def _assert_exact(result, topo, kind: str, algorithm: str) -> None:
    analytic = result.analytic
    key = (topo.kind.value, kind, algorithm)
    assert result.steps == analytic.steps
    assert result.timing.latency_term_s == pytest.approx(analytic.latency_term_s, rel=REL, abs=1e-15)
    assert result.timing.bandwidth_term_s == pytest.approx(analytic.bandwidth_term_s, rel=REL, abs=1e-15)
    assert result.time_s == pytest.approx(analytic.time_s, rel=REL, abs=1e-15)
    sent, expected = result.bytes_sent_per_gpu, analytic.bytes_sent_per_gpu
    if key in CONVENTION_BYTES and topo.gpus > 2:
        assert sent >= expected * (1 - REL) or kind == "reduce"
        if kind == "all-to-all":
            assert sent == pytest.approx(_forwarded_alltoall_bytes(topo), rel=REL)
            assert _own_data_bytes(result.schedule) == pytest.approx(expected, rel=REL)
        if kind == "reduce" and topo.gpus & (topo.gpus - 1) == 0:  # f·M (RS) + M/2 (largest gather subtree)
            assert sent == pytest.approx(((topo.gpus - 1) / topo.gpus + 0.5) * M, rel=REL)
        return
    assert sent == pytest.approx(expected, rel=REL, abs=1e-6)


@pytest.mark.parametrize("spec,kind,algorithm", CASES)
def test_event_driven_cost_agrees_with_analytic(spec, kind, algorithm):
    topo = _build(spec)
    result = simulate(kind, M, topo, algorithm, verify=False, mode="event")
    category = event_classify(topo, kind, algorithm)
    if category == "model":
        return
    analytic = result.analytic
    step = time_routed(result.schedule, topo, "step")
    assert result.time_s <= step.time_s * (1 + REL)  # no barrier: never slower than the synchronous steps
    if category == "exact":
        _assert_exact(result, topo, kind, algorithm)
        if result.spec is not None and algorithm == "rail-ring":  # at 1 MiB: the walk's α is above H02's count
            phases = 2 if kind == "all-reduce" else 1
            inter = phases * topo.nodes
            walk = inter * HIER["inter_latency_s"] + (phases * (topo.gpus - 1) - inter) * HIER["latency_s"]
            assert analytic.formula_id == result.spec.formula_id + "-channels"
            assert result.timing.latency_term_s == pytest.approx(walk, rel=REL)
        if result.spec is not None:
            assert result.time_s >= result.spec.time_s * (1 - REL)
    else:  # dimension-concurrent on unequal dimensions: the barrier-free form exactly, the phase-max T04 above
        factor = 2 if kind == "all-reduce" else 1
        overlapped = concurrent_reduce_scatter_overlapped(topo.dims, M, BW, ALPHA,
                                                          topo.kind == TopologyKind.TORUS, kind == "all-gather")
        assert analytic.formula_id == result.spec.formula_id + "-overlapped"
        assert analytic.time_s == pytest.approx(factor * (overlapped.alpha_term_s + overlapped.bw_term_s), rel=REL)
        # the critical path's α count: the schedule has more steps, some of them overlapping
        assert result.steps >= analytic.steps
        assert result.timing.latency_term_s == pytest.approx(analytic.latency_term_s, rel=REL)
        assert result.timing.bandwidth_term_s == pytest.approx(analytic.bandwidth_term_s, rel=REL)
        assert result.time_s == pytest.approx(analytic.time_s, rel=REL)
        assert result.spec.time_s >= result.time_s * (1 - REL)


def test_sweep_covers_every_topology_collective_and_enough_cases():
    kinds = {c.values[0][0] for c in CASES}
    assert kinds == {k.value for k in TopologyKind}
    assert {c.values[1] for c in CASES} == {k.value for k in CollectiveKind}
    algorithms = {c.values[2] for c in CASES}
    assert len(algorithms) >= 25
    assert len(CASES) > 1000
