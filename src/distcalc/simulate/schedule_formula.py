"""The closed form of a schedule as the simulator runs it, where the collective library prices the algorithm
with a different spec formula.

* Pipelined trees (double binary tree, chain + DBT, in-network reduction): the schedule runs k segments; the
  library prices F18/H03/F20, the k → ∞ ideal. Their finite-k form is
  :func:`distcalc.collective.pipelined_tree.segmented_cost` at the schedule's k (both timing modes).
* Dimension-concurrent RS/AG/AR on a mesh or torus of unequal dimensions, event-driven timing: without step
  barriers every part goes on to its next dimension as soon as it is done with the previous one, which is
  :func:`distcalc.collective.grid.concurrent_reduce_scatter_overlapped` (a job-shop makespan; AllReduce = RS
  then AG, twice). The library keeps the phase-synchronous T04/T08/T12 docs/spec/collectives.md pins, an
  upper bound of it (§7 caveat).
* Rail-aligned rings (H02) on two levels, event-driven timing: the g rings run as independent channels with
  α in flight (:mod:`distcalc.simulate.events`), which is
  :func:`distcalc.collective.hierarchical.rail_ring_channels_phase` per phase (AllReduce: two). The library
  keeps H02 (NCCL's older tuning count of network steps plus the busiest link's time); ``nccl-ring`` runs the
  same schedule and stays compared with NCCL's own model (H07).

Every other schedule is priced by the library's own formula (:func:`schedule_formula` returns None).
"""

from __future__ import annotations

from distcalc.collective import Algorithm, CollectiveCost, CollectiveKind
from distcalc.collective.grid import concurrent_reduce_scatter_overlapped
from distcalc.collective.hierarchical import rail_ring_channels_phase
from distcalc.collective.pipelined_tree import segmented_cost
from distcalc.simulate.schedule import Schedule
from distcalc.simulate.timing import TimingMode
from distcalc.topology import Topology, TopologyKind

_DIM_CONCURRENT_KINDS = {CollectiveKind.REDUCE_SCATTER: 1, CollectiveKind.ALL_GATHER: 1, CollectiveKind.ALL_REDUCE: 2}


def schedule_formula(kind: CollectiveKind, priced: CollectiveCost, topo: Topology, size_bytes: float,
                     schedule: Schedule, mode: TimingMode) -> CollectiveCost | None:
    """The schedule's own closed form (see the module docstring), or None where ``priced`` (the library's
    cost of the same algorithm) already is it."""
    algorithm = priced.algorithm
    if "segments" in schedule.notes:
        finite = segmented_cost(kind, size_bytes, topo, algorithm, int(schedule.notes["segments"]))
        if finite is not None:
            return finite
    grid = topo.kind in (TopologyKind.MESH, TopologyKind.TORUS) and len(topo.dims) > 1
    if (mode == TimingMode.EVENT and algorithm == Algorithm.DIM_CONCURRENT and grid and len(set(topo.dims)) > 1
            and kind in _DIM_CONCURRENT_KINDS):
        times = _DIM_CONCURRENT_KINDS[kind]
        terms = concurrent_reduce_scatter_overlapped(topo.dims, float(size_bytes), topo.bandwidth_bytes_per_s,
                                                     topo.latency_s, topo.kind == TopologyKind.TORUS,
                                                     kind == CollectiveKind.ALL_GATHER)
        alpha, bw = times * float(terms.alpha_term_s), times * float(terms.bw_term_s)
        return CollectiveCost(collective=kind, algorithm=algorithm, size_bytes=float(size_bytes), gpus=topo.gpus,
                              time_s=alpha + bw, latency_term_s=alpha, bandwidth_term_s=bw,
                              steps=times * int(terms.steps), bytes_sent_per_gpu=times * float(terms.sent_bytes),
                              formula_id=f"{priced.formula_id}-overlapped")
    g = topo.gpus_per_node or topo.gpus
    if (mode == TimingMode.EVENT and algorithm == Algorithm.RAIL_RING and topo.kind == TopologyKind.HIERARCHICAL
            and topo.nodes > 1 and g > 1 and kind in _DIM_CONCURRENT_KINDS):
        times = _DIM_CONCURRENT_KINDS[kind]
        terms = rail_ring_channels_phase(g, topo.nodes, float(size_bytes), topo.bandwidth_bytes_per_s,
                                         topo.latency_s, float(topo.inter_bandwidth_bytes_per_s),
                                         float(topo.inter_latency_s))
        alpha, bw = times * terms.alpha_term_s, times * terms.bw_term_s
        return CollectiveCost(collective=kind, algorithm=algorithm, size_bytes=float(size_bytes), gpus=topo.gpus,
                              time_s=alpha + bw, latency_term_s=alpha, bandwidth_term_s=bw, steps=priced.steps,
                              bytes_sent_per_gpu=priced.bytes_sent_per_gpu,
                              formula_id=f"{priced.formula_id}-channels")
    return None
