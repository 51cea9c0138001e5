"""``--cluster NAME --gpus N`` for ``collective``/``simulate`` and ``--algorithm nccl`` (rendering and option
plumbing only; the topology comes from :func:`distcalc.placement.group_placement`, the NCCL model from
:mod:`distcalc.collective.nccl_tuner`)."""

from __future__ import annotations

from typing import Optional

from rich.table import Table

from distcalc.cli.common import console, parse_or_exit
from distcalc.cluster import ClusterSpec, load_cluster
from distcalc.collective import lower_bound
from distcalc.collective.busbw import algbw_busbw, busbw_factor
from distcalc.collective.nccl_cluster import nccl_system
from distcalc.collective.nccl_constants import NcclAlgo, NcclProto, parse_version
from distcalc.collective.nccl_tuner import NcclEstimate, nccl_estimate
from distcalc.errors import AlgorithmError, TopologyError
from distcalc.placement import group_placement
from distcalc.topology import Topology, TopologyKind, make_topology
from distcalc.traffic import Dim
from distcalc.units import format_rate, format_size, format_time, parse_rate, parse_time


def load_cli_cluster(name: str, intra_bandwidth: Optional[str], intra_latency: Optional[str],
                     inter_bandwidth: Optional[str], inter_latency: Optional[str],
                     bandwidth: Optional[str] = None, latency: Optional[str] = None) -> ClusterSpec:
    """The preset with the link flags applied (as ``analyze`` does); ``--bandwidth``/``--latency`` are refused."""
    for flag, value in (("--bandwidth", bandwidth), ("--latency", latency)):
        if value is not None:
            raise TopologyError(f"{flag} {value!r} does not apply with --cluster: use --intra-{flag[2:]} or "
                                f"--inter-{flag[2:]}")
    rate = lambda flag, text: None if text is None else parse_or_exit(parse_rate, text, flag)  # noqa: E731
    time = lambda flag, text: None if text is None else parse_or_exit(parse_time, text, flag)  # noqa: E731
    return load_cluster(name, intra_bandwidth_bytes_per_s=rate("--intra-bandwidth", intra_bandwidth),
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


def parse_nccl_lists(algos: Optional[str], protos: Optional[str]) -> tuple[list | None, list | None]:
    """``--nccl-algo ring,nvls`` / ``--nccl-proto LL,Simple`` (NCCL_ALGO / NCCL_PROTO) → enum lists."""
    def parse(text: Optional[str], enum_type, flag: str) -> list | None:
        if not text:
            return None
        by_name = {m.value.lower(): m for m in enum_type}
        out = []
        for part in text.split(","):
            key = part.strip().lower()
            if key not in by_name:
                raise AlgorithmError(f"{flag} {part.strip()!r} is unknown: valid are "
                                     f"{', '.join(m.value for m in enum_type)}")
            out.append(by_name[key])
        return out
    return parse(algos, NcclAlgo, "--nccl-algo"), parse(protos, NcclProto, "--nccl-proto")


def nccl_estimates(kind: str, sizes: list, cluster: ClusterSpec, gpus: int, version: str, algos: Optional[str],
                   protos: Optional[str], collnet: bool) -> list[NcclEstimate]:
    """NCCL's choice and time for each size."""
    system = nccl_system(cluster, gpus, collnet=collnet)
    algo_list, proto_list = parse_nccl_lists(algos, protos)
    ver = parse_version(version)
    return [nccl_estimate(system, kind, size, ver, algo_list, proto_list) for size in sizes]


def nccl_record(estimate: NcclEstimate, kind: str, gpus: int) -> dict:
    """One ``results`` entry (design §4 keys plus the NCCL fields)."""
    algbw, busbw = algbw_busbw(kind, estimate.size_bytes, estimate.time_s, gpus)
    out = estimate.as_dict()
    out.update(size_bytes=estimate.size_bytes, formula_id=f"NCCL {estimate.version.value} tuning model",
               bytes_sent_per_gpu=busbw_factor(kind, gpus) * estimate.size_bytes, algbw_bytes_per_s=algbw,
               busbw_bytes_per_s=busbw)
    return out


def nccl_payload(kind: str, estimates: list[NcclEstimate], topo: Topology, cluster: ClusterSpec, gpus: int) -> dict:
    """The JSON object of ``collective --algorithm nccl``."""
    records = [nccl_record(e, kind, gpus) for e in estimates]
    bounds = [float(lower_bound(kind, e.size_bytes, topo).time_s) for e in estimates]
    topology = dict(topo.describe(), cluster=cluster.name)
    if len(estimates) == 1:
        return {"collective": kind, "size_bytes": estimates[0].size_bytes, "topology": topology,
                "results": records, "best": records[0]["algorithm"], "best_time_s": records[0]["time_s"],
                "lower_bound_s": bounds[0]}
    return {"collective": kind, "size_bytes": [e.size_bytes for e in estimates], "topology": topology,
            "results": records, "best": [{"size_bytes": r["size_bytes"], "algorithm": r["algorithm"],
                                          "time_s": r["time_s"]} for r in records], "lower_bound_s": bounds}


def render_nccl(kind: str, estimates: list[NcclEstimate], cluster: ClusterSpec, gpus: int) -> None:
    """Rich table: size, NCCL's algorithm, protocol, channels, time and its terms, algbw, busbw."""
    version = estimates[0].version.value
    table = Table(title=f"{kind} on {gpus} GPUs of {cluster.name}: NCCL {version} tuning model")
    for column in ("size", "algorithm", "protocol", "channels", "time", "latency term", "bandwidth term",
                   "algbw", "busbw"):
        table.add_column(column, justify="left" if column in ("algorithm", "protocol") else "right")
    for e in estimates:
        algbw, busbw = algbw_busbw(kind, e.size_bytes, e.time_s, gpus)
        table.add_row(format_size(e.size_bytes), e.algorithm.value, e.protocol.value, str(e.channels),
                      format_time(e.time_s), format_time(e.latency_term_s), format_time(e.bandwidth_term_s),
                      format_rate(algbw) if e.time_s else "-", format_rate(busbw) if e.time_s else "-")
    console.print(table)
