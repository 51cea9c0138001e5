"""Process groups on a cluster: lay the ranks out and give every group the topology its members span.

Rank layout (Megatron-LM ``parallel_state``): with the default order ``tp, cp, dp, pp`` (innermost first)
rank = tp_i + tp·(cp_i + cp·(dp_i + dp·pp_i)); a group of dimension X is ``size_X`` ranks at stride
``stride_X`` = product of the sizes of the dimensions inside X. Expert parallelism is carved out of the
cp×dp ranks (Megatron-Core): an EP group is ``ep`` consecutive ranks of that space (stride of its inner
dimension). Ranks fill nodes in order: rank r is GPU ``r mod g`` of node ``⌊r/g⌋``.

Topology of a group (docs/design.md §5), members counted per node:

* all members in one node → the node's fabric: ``switch`` (NVSwitch, B = NVLink per direction) or, on a
  TPU torus node, the sub-grid the members occupy: a torus along every full axis, a mesh along partial
  axes (``torus``/``mesh`` with the members' extent per axis);
* one member per node → ``switch`` over the inter-node fabric (rail-optimised, full bisection), B = the
  GPU's share of the node's NICs ``nics·B_NIC/g``: every GPU of a node belongs to one such group and they
  all run at the same time, so each group gets exactly its members' NIC share (with one NIC per GPU: its
  own rail, e.g. TP = 8 on DGX nodes gives each DP group its own rail);
* k > 1 members per node on n > 1 nodes → ``hierarchical`` (k GPUs per node on NVLink + n nodes over the
  NICs, k NIC shares per node): with TP = 2 on 8-GPU nodes, the two DP groups of a node each hold 4 GPUs
  and use those GPUs' 4 NICs concurrently.

Bandwidths handed to the collective library are effective ones, ``η·B`` (:mod:`distcalc.cluster`), and
:func:`effective_time_s` adds the NCCL pipeline fill ``(passes·(N − 1) − 1)·min(M/N, C)/(η·B)`` for the
ring-like collectives (AllReduce passes = 2; ReduceScatter, AllGather = 1; AllToAll and Send/Recv none).
A chunk filling the pipeline crosses every hop of the ring at that hop's speed: on a hierarchical group
(k GPUs on each of n nodes) n of the N = k·n hops are NIC hops and the rest NVLink, so ``η·B`` of the
fill is the hops' harmonic mean ``1 / ((n/N)/B_inter + (1 − n/N)/B_intra)``; flat groups use their one
tier.

The same ring-like collectives also pay the link's ``collective_overhead_s`` once each (the larger of the
two tiers' on a hierarchical group): what one collective costs beyond the α-β model when a framework issues
them back to back through ``torch.distributed`` (kernel launch, the NCCL stream's event synchronisation with
the compute stream). An in-node link may state the all-to-all's own η (``alltoall_efficiency``): NCCL's
all-to-all sends N − 1 point-to-point messages per rank and reaches a lower share of NVSwitch bandwidth than
its rings (DGX B200: 0.597 against 0.673 of 900 GiB/s, SimuMax's nccl-tests fits); AllToAll on such a group
runs on that η·B. Where the link also states the all-to-all's own α per peer (``alltoall_latency``), an
in-node AllToAll is priced as the fit's form, ``(N − 1)·α_a2a + f·M/(η_a2a·B)`` (the pairwise exchange's
formula): one send and one receive per peer, each paying its protocol latency (DGX B200: 7.30 µs per peer
against the rings' 8.6 µs per step). SimuMax measured the overhead on a DGX B200 (32 MiB AllReduce / AllGather / ReduceScatter in
bursts of 20 at 2, 4 and 8 ranks, minus its nccl-tests α-β fit: 22.2, 23.1, 25.6 µs; MooreThreads/SimuMax
``configs/system/b200_bf16_ceperm.json``, ``tools/b200/build_current_machine_system_config.py``); links
without a measurement carry 0.
"""

from __future__ import annotations

from collections import Counter

import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np

from distcalc.cluster import ClusterSpec
from distcalc.errors import ConfigError
from distcalc.topology import Topology, TopologyKind, make_topology
from distcalc.traffic import Comm, Dim

DEFAULT_ORDER: tuple[str, ...] = ("tp", "cp", "dp", "pp")


@dataclass(frozen=True)
class GroupPlacement:
    """Where one group of a parallel dimension sits and the topology its collectives run on."""

    dim: Dim
    size: int
    stride: int
    nodes: int  #: nodes the group spans
    members_per_node: int
    topology: Topology | None  #: None when size == 1
    fill_bandwidth_bytes_per_s: float  #: η·B of the group's slowest tier (pipeline-fill term)
    pipeline_chunk_bytes: float
    tier: str  #: "intra", "inter", "hierarchical" or "none"
    preferred_algorithm: str = "auto"  #: the cluster's library algorithm where valid (NCCL: ring)
    #: per-collective overhead of the group's link (:attr:`distcalc.cluster.LinkSpec.collective_overhead_s`)
    collective_overhead_s: float = 0.0
    #: AllToAll's effective bandwidth over the topology's η·B (the link's measured all-to-all η / η; 1: same η)
    alltoall_bandwidth_scale: float = 1.0
    #: AllToAll's measured α per peer (:attr:`distcalc.cluster.LinkSpec.alltoall_latency_s`); None: not measured
    alltoall_latency_s: float | None = None

    def describe(self) -> dict[str, Any]:
        """JSON-friendly summary (docs/design.md §4 ``topology`` field)."""
        if self.topology is None:
            return {"kind": "none", "gpus": 1, "tier": self.tier}
        topo = self.topology
        out = {"kind": topo.kind.value, "gpus": topo.gpus, "tier": self.tier, "nodes": self.nodes,
               "members_per_node": self.members_per_node, "stride": self.stride,
               "bandwidth_bytes_per_s": topo.bandwidth_bytes_per_s, "latency_s": topo.latency_s}
        if topo.shape:
            out["shape"] = list(topo.shape)
        if topo.kind == TopologyKind.HIERARCHICAL:
            out["inter_bandwidth_bytes_per_s"] = topo.inter_bandwidth_bytes_per_s
            out["inter_latency_s"] = topo.inter_latency_s
        return out


def parse_order(order: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """``"tp-cp-dp-pp"`` → tuple; must be a permutation of tp, cp, dp, pp."""
    if order is None:
        return DEFAULT_ORDER
    parts = tuple(order.replace(",", "-").split("-")) if isinstance(order, str) else tuple(order)
    if sorted(parts) != sorted(DEFAULT_ORDER):
        raise ConfigError(f"rank order {order!r} must be a permutation of tp-cp-dp-pp (innermost first)")
    return parts


def strides(sizes: dict[str, int], order: tuple[str, ...]) -> dict[str, int]:
    """Stride of each dimension: product of the sizes of the dimensions inside it."""
    out, running = {}, 1
    for name in order:
        out[name] = running
        running = running * sizes[name]
    return out


def _torus_subtopology(cluster: ClusterSpec, members: list[int], link_bw: float) -> Topology:
    shape = cluster.shape or (cluster.gpus_per_node,)
    coords = [np.unravel_index(r % cluster.gpus_per_node, shape, order="F") for r in members]
    extents = [len({int(c[axis]) for c in coords}) for axis in range(len(shape))]
    varying = [(e, full) for e, full in zip(extents, shape) if e > 1]
    if math.prod(e for e, _ in varying) != len(members):  # not a sub-grid: a snake ring over the members
        return make_topology(TopologyKind.RING, len(members), link_bw, cluster.intra.latency_s)
    dims = tuple(e for e, _ in varying)
    kind = TopologyKind.TORUS if all(e == full for e, full in varying) else TopologyKind.MESH
    if len(dims) == 1 and kind == TopologyKind.TORUS:
        return make_topology(TopologyKind.RING, dims[0], link_bw, cluster.intra.latency_s)
    return make_topology(kind, len(members), link_bw, cluster.intra.latency_s, shape=dims)


@lru_cache(maxsize=1024)
def group_placement(cluster: ClusterSpec, dim: Dim, size: int, stride: int,
                    in_network_reduction: bool | None = None) -> GroupPlacement:
    """Placement and topology of the group of ``size`` ranks at ``stride`` that contains rank 0 (cached: the
    cluster is frozen and the placement immutable, so its topology keeps its candidate algorithms between
    calls)."""
    if size <= 1:
        return GroupPlacement(dim, 1, stride, 1, 1, None, 1.0, 0.0, "none")
    g = cluster.gpus_per_node
    members = [j * stride for j in range(size)]
    members_per_node = Counter(r // g for r in members)
    nodes = len(members_per_node)
    per_node = max(members_per_node.values())
    intra_bw = cluster.intra.bandwidth_bytes_per_s * cluster.intra.efficiency
    inr = cluster.in_network_reduction if in_network_reduction is None else in_network_reduction
    if nodes == 1:
        if cluster.intra_topology == "torus":
            topo = _torus_subtopology(cluster, members, intra_bw)
        else:
            topo = make_topology(TopologyKind.SWITCH, size, intra_bw, cluster.intra.latency_s,
                                 in_network_reduction=inr)
        a2a = cluster.intra.alltoall_efficiency
        return GroupPlacement(dim, size, stride, 1, size, topo, intra_bw, cluster.intra.pipeline_chunk_bytes, "intra",
                              cluster.collective_algorithm, cluster.intra.collective_overhead_s,
                              a2a / cluster.intra.efficiency if a2a is not None else 1.0,
                              cluster.intra.alltoall_latency_s)
    if cluster.inter is None or cluster.inter_bandwidth_per_gpu_bytes_per_s == 0:
        raise ConfigError(f"cluster {cluster.name!r} has no inter-node link but the {dim.value} group spans "
                          f"{nodes} nodes (size {size}, stride {stride}, {g} GPUs per node)")
    inter_bw = cluster.inter_bandwidth_per_gpu_bytes_per_s * cluster.inter.efficiency
    chunk = cluster.inter.pipeline_chunk_bytes
    if per_node == 1:
        topo = make_topology(TopologyKind.SWITCH, size, inter_bw, cluster.inter.latency_s)
        return GroupPlacement(dim, size, stride, nodes, 1, topo, inter_bw, chunk, "inter", cluster.collective_algorithm,
                              cluster.inter.collective_overhead_s)
    gpus = per_node * nodes  # uneven spans are rounded up to the fullest node (approximation)
    topo = make_topology(TopologyKind.HIERARCHICAL, gpus, intra_bw, cluster.intra.latency_s,
                         gpus_per_node=per_node, inter_bandwidth_bytes_per_s=inter_bw,
                         inter_latency_s=cluster.inter.latency_s)
    # a ring through k GPUs on each of n nodes crosses the NICs n times and NVLink (k - 1)·n times: its
    # pipeline fill pays each hop at that hop's bandwidth (harmonic mean over the ring's hops)
    inter_share = nodes / gpus
    fill_bw = 1.0 / (inter_share / inter_bw + (1.0 - inter_share) / intra_bw)
    return GroupPlacement(dim, size, stride, nodes, per_node, topo, fill_bw, chunk, "hierarchical",
                          cluster.collective_algorithm,
                          max(cluster.intra.collective_overhead_s, cluster.inter.collective_overhead_s))


def place_groups(cluster: ClusterSpec, tp: int = 1, pp: int = 1, dp: int = 1, cp: int = 1, ep: int = 1,
                 order: str | tuple[str, ...] | None = None) -> dict[Dim, GroupPlacement]:
    """Placement of one group of every dimension (groups of a dimension are translates of each other).
    The PP entry describes one stage boundary (2 ranks at the PP stride)."""
    order_t = parse_order(order)
    sizes = {"tp": tp, "cp": cp, "dp": dp, "pp": pp}
    stride = strides(sizes, order_t)
    inner_ep = min(("cp", "dp"), key=lambda d: order_t.index(d))
    ep_stride = stride[inner_ep] if sizes[inner_ep] > 1 or inner_ep == "dp" else stride["dp"]
    return {
        Dim.TP: _cached(cluster, Dim.TP, tp, stride["tp"]),
        Dim.CP: _cached(cluster, Dim.CP, cp, stride["cp"]),
        Dim.DP: _cached(cluster, Dim.DP, dp, stride["dp"]),
        Dim.EP: _cached(cluster, Dim.EP, ep, ep_stride),
        Dim.PP: _cached(cluster, Dim.PP, 2 if pp > 1 else 1, stride["pp"]),
    }


@lru_cache(maxsize=4096)
def _cached(cluster: ClusterSpec, dim: Dim, size: int, stride: int) -> GroupPlacement:
    return group_placement(cluster, dim, size, stride)


def effective_time_s(kind: Comm, size_bytes: Any, placement: GroupPlacement,
                     algorithm: str = "auto") -> tuple[Any, Any]:
    """(time_s, algorithm) of one collective of ``size_bytes`` on the group's topology: the collective
    library's α-β cost on the effective (η-scaled) links plus the NCCL pipeline fill (module docstring).
    Works elementwise on a NumPy array of sizes; size 1 or M = 0 costs 0."""
    time_s, algo = effective_time_elementwise_s(kind, size_bytes, placement, algorithm)
    return time_s, algorithm_name(algo)


def algorithm_name(algo: Any, index: int = 0) -> str:
    """Name of the algorithm :func:`effective_time_elementwise_s` chose for element ``index`` (``"none"``
    for an empty array)."""
    if isinstance(algo, np.ndarray):
        algo = algo.flat[index] if algo.size else "none"
    return getattr(algo, "value", str(algo))


#: Passes of the data through the ring that the pipeline fill is paid on (AllReduce: ReduceScatter + AllGather).
_FILL_PASSES = {Comm.ALL_REDUCE: 2, Comm.REDUCE_SCATTER: 1, Comm.ALL_GATHER: 1}


def effective_time_elementwise_s(kind: Comm, size_bytes: Any, placement: GroupPlacement,
                                 algorithm: str = "auto") -> tuple[Any, Any]:
    """:func:`effective_time_s` with the algorithm per element (an object array where ``auto`` picked
    elementwise, else one name): one call prices a whole array of sizes of one collective on one group."""
    from distcalc.collective import CollectiveKind, collective_cost, valid_algorithms
    from distcalc.p2p import send_recv_cost

    m = np.asarray(size_bytes, dtype=float)
    if placement.topology is None:
        return np.zeros_like(m), "none"
    topo = placement.topology
    if kind == Comm.SEND_RECV:
        cost = send_recv_cost(m, topo, 0, topo.gpus - 1 if topo.gpus > 1 else 0)
        return np.where(m > 0, cost.time_s, 0.0), "p2p"
    if kind == Comm.ALL_TO_ALL and placement.alltoall_bandwidth_scale != 1.0:
        topo = replace(topo, bandwidth_bytes_per_s=topo.bandwidth_bytes_per_s * placement.alltoall_bandwidth_scale)
    if kind == Comm.ALL_TO_ALL and placement.alltoall_latency_s is not None and algorithm == "auto":
        # the measured fit's form, (N−1)·α_a2a + f·M/(η_a2a·B): the pairwise exchange (F22) on that α
        topo = replace(topo, latency_s=placement.alltoall_latency_s)
        algorithm = "pairwise"
    collective = CollectiveKind(kind.value)
    if algorithm == "auto" and placement.preferred_algorithm != "auto" and placement.preferred_algorithm in {
            a.value for a in valid_algorithms(collective, topo)}:
        algorithm = placement.preferred_algorithm
    cost = collective_cost(collective, m, topo, algorithm=algorithm)
    n = placement.size
    passes = _FILL_PASSES.get(kind, 0)
    fill_steps = max(passes * (n - 1) - 1, 0)
    fill = fill_steps * np.minimum(m / n, placement.pipeline_chunk_bytes) / placement.fill_bandwidth_bytes_per_s
    overhead = placement.collective_overhead_s if passes else 0.0
    return np.where(m > 0, cost.time_s + fill + overhead, 0.0), cost.algorithm
