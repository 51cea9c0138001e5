"""``collective --algorithm nccl`` as a job: NCCL's own choice (algorithm, protocol, channels) and time for a
collective on ``--gpus`` consecutive ranks of a cluster preset (the model lives in
:mod:`distcalc.collective.nccl_tuner`)."""

from __future__ import annotations

from typing import Any, Optional

from distcalc.cluster import ClusterSpec, list_clusters
from distcalc.collective import lower_bound
from distcalc.collective.busbw import algbw_busbw, busbw_factor
from distcalc.collective.nccl_cluster import nccl_system
from distcalc.collective.nccl_constants import NcclAlgo, NcclProto, parse_version
from distcalc.collective.nccl_tuner import NcclEstimate, nccl_estimate
from distcalc.errors import AlgorithmError
from distcalc.jobs.messages import parse_option
from distcalc.jobs.collective import (
    CollectiveRequest, cluster_topology, parse_collective_kind,
)
from distcalc.p2p import SEND_RECV
from distcalc.topology import Topology
from distcalc.units import parse_size_range


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
    """One ``results`` entry (docs/design.md §4 keys plus the NCCL fields)."""
    algbw, busbw = algbw_busbw(kind, estimate.size_bytes, estimate.time_s, gpus)
    out = estimate.as_dict()
    out.update(size_bytes=estimate.size_bytes, formula_id=f"NCCL {estimate.version.value} model",
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


def is_nccl(request: CollectiveRequest) -> bool:
    """``--algorithm nccl``."""
    return request.algorithm.strip().lower() == "nccl"


def run_nccl(request: CollectiveRequest, allow_files: bool = False) -> dict[str, Any]:
    """Everything ``collective --algorithm nccl`` shows: kind, the cluster, its estimates per size, topology."""
    kind = parse_collective_kind(request.kind)
    sizes = parse_option(parse_size_range, request.size, "--size")
    if not (request.cluster or request.gpu):
        raise AlgorithmError("--algorithm nccl needs --cluster NAME (NCCL's tuner reads the node's NVLink, "
                             f"NICs and GPU generation): valid clusters are {', '.join(list_clusters())}")
    if kind == SEND_RECV:
        raise AlgorithmError("--algorithm nccl prices collectives; send-recv is valid with p2p")
    hardware = request.hardware(allow_files)
    assert hardware is not None
    spec = hardware.cluster
    estimates = nccl_estimates(kind, sizes, spec, request.gpus, request.nccl_version, request.nccl_algo,
                               request.nccl_proto, request.collnet)
    return {"kind": kind, "cluster": spec, "hardware": hardware, "estimates": estimates,
            "topo": cluster_topology(spec, request.gpus)}


def nccl_json(run: dict[str, Any], gpus: int) -> dict[str, Any]:
    """The ``collective --algorithm nccl --json`` object of :func:`run_nccl`'s result."""
    return nccl_payload(run["kind"], run["estimates"], run["topo"], run["cluster"], gpus)
