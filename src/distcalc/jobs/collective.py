"""``collective`` as a job: request → per-size cost records → the ``--json`` payload; also the topology
builder that ``collective`` and ``simulate`` share (docs/design.md §4 topology options, --help defaults)."""

from __future__ import annotations

from typing import Any, Callable, Optional

from pydantic import Field

from distcalc.cluster import ClusterSpec
from distcalc.collective import (
    Algorithm, CollectiveKind, collective_cost, collective_costs, lower_bound, parse_algorithm, parse_kind,
    valid_algorithms,
)
from distcalc.collective.busbw import algbw_busbw
from distcalc.errors import AlgorithmError, TopologyError
from distcalc.hardware_choice import Hardware, resolve_hardware
from distcalc.inputs import excerpt
from distcalc.jobs.base import JobRequest
from distcalc.jobs.messages import parse_option
from distcalc.p2p import SEND_RECV, send_recv_cost
from distcalc.placement import group_placement
from distcalc.topology import Topology, TopologyKind, kind_traits, make_topology
from distcalc.topology.kinds import kinds_with
from distcalc.traffic import Dim
from distcalc.topology_schema import DEFAULTS, TopologyFields
from distcalc.units import parse_rate, parse_size_range, parse_time

KINDS = [k.value for k in CollectiveKind] + [SEND_RECV]


class TopologyRequest(JobRequest, TopologyFields):
    """The topology options shared by ``collective`` and ``simulate``: the fields of
    :class:`~distcalc.topology_schema.TopologyFields`, and the cluster they may be read from instead."""

    cluster: Optional[str] = Field(None, description="cluster preset or (CLI) YAML file, as analyze: the topology "
                                                     "--gpus consecutive ranks span; link options override it")
    gpu: Optional[str] = Field(None, description="GPU preset replacing the cluster's (as analyze)")

    def hardware(self, allow_files: bool = False) -> Optional[Hardware]:
        """The cluster and GPU of ``--cluster``/``--gpu`` with the link flags applied, or None without them."""
        if not (self.cluster or self.gpu):
            return None
        return load_cli_cluster(self.cluster, self.intra_bandwidth, self.intra_latency, self.inter_bandwidth,
                                self.inter_latency, self.bandwidth, self.latency, gpu=self.gpu,
                                allow_files=allow_files)

    def build_topology(self, allow_files: bool = False) -> Topology:
        """The topology of this request: ``--cluster``/``--gpu``'s (:func:`cluster_topology`) or
        :func:`build_topology`'s."""
        hardware = self.hardware(allow_files)
        if hardware is not None:
            return cluster_topology(hardware.cluster, self.gpus)
        return build_topology(self.topology, self.gpus, self.bandwidth, self.latency, self.shape,
                              self.gpus_per_node, self.intra_bandwidth, self.intra_latency, self.inter_bandwidth,
                              self.inter_latency, self.in_network_reduction, self.oversubscription)


class CollectiveRequest(TopologyRequest):
    """The options of ``distcalc collective KIND``."""

    src: int = 0
    dst: int = 1
    nccl_version: str = Field("2.20.5", description="--algorithm nccl: 2.18.5, 2.20.5 or 2.26.2")
    nccl_algo: Optional[str] = Field(None, description="--algorithm nccl: allowed algorithms as NCCL_ALGO")
    nccl_proto: Optional[str] = Field(None, description="--algorithm nccl: allowed protocols as NCCL_PROTO")
    collnet: bool = Field(False, description="--algorithm nccl: the fabric has SHARP (CollNet)")


def load_cli_cluster(name: Optional[str], intra_bandwidth: Optional[str], intra_latency: Optional[str],
                     inter_bandwidth: Optional[str], inter_latency: Optional[str],
                     bandwidth: Optional[str] = None, latency: Optional[str] = None, *, gpu: Optional[str] = None,
                     allow_files: bool = True) -> Hardware:
    """The cluster (preset or YAML file) and ``gpu`` with the link flags applied (as ``analyze`` does, with the
    same ``--gpu`` rule); ``--bandwidth``/``--latency`` are refused."""
    for flag, value in (("--bandwidth", bandwidth), ("--latency", latency)):
        if value is not None:
            raise TopologyError(f"{flag} {value!r} and --cluster/--gpu both describe the network: give one (or "
                                f"override a tier with --intra-{flag[2:]} / --inter-{flag[2:]})")
    rate = lambda flag, text: None if text is None else parse_option(parse_rate, text, flag)  # noqa: E731
    time = lambda flag, text: None if text is None else parse_option(parse_time, text, flag)  # noqa: E731
    return resolve_hardware(name, gpu, allow_files=allow_files,
                            intra_bandwidth_bytes_per_s=rate("--intra-bandwidth", intra_bandwidth),
                            intra_latency_s=time("--intra-latency", intra_latency),
                            inter_bandwidth_bytes_per_s=rate("--inter-bandwidth", inter_bandwidth),
                            inter_latency_s=time("--inter-latency", inter_latency))


def cluster_topology(cluster: ClusterSpec, gpus: int) -> Topology:
    """The topology ``gpus`` consecutive ranks of ``cluster`` span: exactly what ``analyze`` gives such a group
    (a switch inside a node, rails across nodes, hierarchical for several GPUs per node; effective ``η·B``)."""
    if gpus < 1:
        raise TopologyError(f"--gpus {gpus} must be ≥ 1")
    if gpus == 1:
        return make_topology(TopologyKind.SWITCH, 1, cluster.intra.bandwidth_bytes_per_s, cluster.intra.latency_s)
    placement = group_placement(cluster, Dim.DP, gpus, 1)
    assert placement.topology is not None
    return placement.topology


def build_topology(topology: str, gpus: int, bandwidth: Optional[str], latency: Optional[str],
                   shape: Optional[str], gpus_per_node: Optional[int], intra_bandwidth: Optional[str],
                   intra_latency: Optional[str], inter_bandwidth: Optional[str], inter_latency: Optional[str],
                   in_network_reduction: bool, oversubscription: float = 1.0) -> Topology:
    """Turn the shared topology options (docs/design.md §4) into a :class:`Topology`; defaults as in ``--help``."""
    try:
        kind = TopologyKind(topology.strip().lower())
    except ValueError:
        valid = ", ".join(k.value for k in TopologyKind)
        raise TopologyError(f"--topology {topology!r} is unknown: valid topologies are {valid}") from None
    rate = lambda name, text: parse_option(parse_rate, text, name)  # noqa: E731
    time = lambda name, text: parse_option(parse_time, text, name)  # noqa: E731
    if kind_traits(kind).two_tier:
        b1 = rate("--intra-bandwidth", intra_bandwidth or bandwidth or DEFAULTS["intra_bandwidth"])
        a1 = time("--intra-latency", intra_latency or latency or DEFAULTS["intra_latency"])
        b2 = rate("--inter-bandwidth", inter_bandwidth or DEFAULTS["inter_bandwidth"])
        a2 = time("--inter-latency", inter_latency or DEFAULTS["inter_latency"])
        return make_topology(kind, gpus, b1, a1, gpus_per_node=gpus_per_node, inter_bandwidth_bytes_per_s=b2,
                             inter_latency_s=a2)
    for name, value in (("--intra-bandwidth", intra_bandwidth), ("--intra-latency", intra_latency),
                        ("--inter-bandwidth", inter_bandwidth), ("--inter-latency", inter_latency)):
        if value is not None:
            raise TopologyError(f"{name} {value!r} applies only to --topology {kinds_with('two_tier')}, "
                                f"not {kind.value}")
    b = rate("--bandwidth", bandwidth or DEFAULTS["bandwidth"])
    a = time("--latency", latency or DEFAULTS["latency"])
    return make_topology(kind, gpus, b, a, shape=shape, gpus_per_node=gpus_per_node,
                         in_network_reduction=in_network_reduction, oversubscription=oversubscription)


def parse_collective_kind(text: str) -> str:
    """A collective name (or send-recv and its aliases) → its canonical value."""
    if text.strip().lower() in (SEND_RECV, "sendrecv", "send_recv", "p2p"):
        return SEND_RECV
    try:
        return parse_kind(text).value
    except AlgorithmError:
        raise AlgorithmError(f"unknown collective {excerpt(text)}: valid collectives are {', '.join(KINDS)}") from None


def records(kind: str, size: int, topo: Topology, algorithm: Any, src: int, dst: int) -> list:
    """Cost records of one size: the chosen algorithm, or every valid one (``all``)."""
    if kind == SEND_RECV:
        if algorithm not in ("auto", "all", Algorithm.P2P):
            raise AlgorithmError(f"algorithm {algorithm.value!r} is not valid for send-recv: valid is p2p")
        return [send_recv_cost(size, topo, src, dst)]
    if algorithm == "all":
        return collective_costs(kind, size, topo)
    return [collective_cost(kind, size, topo, algorithm)]


def lower_bound_s(kind: str, size: int, topo: Topology, recs: list) -> float:
    """The collective's lower bound (a send-recv is its own bound)."""
    if kind == SEND_RECV:
        return float(recs[0].time_s)  # the one-link send is its own bound (docs/spec/collectives.md §3: trivially met)
    return float(lower_bound(kind, size, topo).time_s)


def result_dict(record: Any, kind: str, topo: Topology) -> dict:
    """One record as JSON with algbw and busbw (nccl-tests conventions)."""
    out = record.as_dict()
    out["algbw_bytes_per_s"], out["busbw_bytes_per_s"] = algbw_busbw(kind, record.size_bytes, record.time_s,
                                                                     topo.gpus)
    return out


def run_collective(request: CollectiveRequest, topo: Optional[Topology] = None,
                   topo_for_size: Optional[Callable[[int], Topology]] = None) -> dict[str, Any]:
    """Everything ``distcalc collective`` shows: kind, sizes, topology, algorithm, records and bounds per size.
    ``topo``: a topology already built instead of the request's; ``topo_for_size``: one topology per message
    size (a calibration whose fit has a segment per size regime), ``topo`` being the largest size's."""
    kind = parse_collective_kind(request.kind)
    sizes = parse_option(parse_size_range, request.size, "--size")
    if topo_for_size is not None:
        topo = topo_for_size(max(sizes))
    topo = topo if topo is not None else request.build_topology()
    at = topo_for_size or (lambda size: topo)
    choice = parse_algorithm(request.algorithm)
    if kind != SEND_RECV and choice not in ("auto", "all") and choice not in valid_algorithms(kind, topo):
        collective_cost(kind, sizes[0], topo, choice)  # raises AlgorithmError listing the valid ones
    per_size = [(s, records(kind, s, at(s), choice, request.src, request.dst)) for s in sizes]
    bounds = [lower_bound_s(kind, s, at(s), recs) for s, recs in per_size]
    return {"kind": kind, "sizes": sizes, "topo": topo, "choice": choice, "per_size": per_size, "bounds": bounds}


def collective_payload(run: dict[str, Any]) -> dict[str, Any]:
    """The ``distcalc collective --json`` object of :func:`run_collective`'s result."""
    kind, topo, per_size, bounds = run["kind"], run["topo"], run["per_size"], run["bounds"]
    if len(per_size) == 1:
        size, recs = per_size[0]
        best = min(recs, key=lambda r: r.time_s)
        return {"collective": kind, "size_bytes": size, "topology": topo.describe(),
                "results": [result_dict(r, kind, topo) for r in recs], "best": best.algorithm.value,
                "best_time_s": best.time_s, "lower_bound_s": bounds[0]}
    results, winners = [], []
    for size, recs in per_size:
        for record in recs:
            results.append({"size_bytes": size, **result_dict(record, kind, topo)})
        winner = min(recs, key=lambda r: r.time_s)
        winners.append({"size_bytes": size, "algorithm": winner.algorithm.value, "time_s": winner.time_s})
    return {"collective": kind, "size_bytes": [s for s, _ in per_size], "topology": topo.describe(),
            "results": results, "best": winners, "lower_bound_s": bounds}
