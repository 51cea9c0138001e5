"""An :class:`~distcalc.collective.nccl_graph.NcclSystem` from a cluster preset and a GPU count.

``gpus`` ranks fill nodes in order (as ``analyze`` lays ranks out): ≤ ``gpus_per_node`` ranks are one node,
more must be whole nodes. NCCL reads a NIC's speed in Gb/s and divides by 8 (GB/s = 1e9 B/s), which is the
preset's per-direction bandwidth in bytes/s / 1e9.
"""

from __future__ import annotations

from distcalc.cluster import ClusterSpec
from distcalc.collective.nccl_graph import CPU_VENDOR, GPU_ARCH, NcclSystem
from distcalc.errors import AlgorithmError


def nccl_system(cluster: ClusterSpec, gpus: int, *, collnet: bool = False) -> NcclSystem:
    """The system NCCL's tuner sees for ``gpus`` ranks of ``cluster``; :class:`AlgorithmError` where the NCCL
    model has no data (a GPU without an NVSwitch NVLink entry, a torus, partial nodes)."""
    if gpus < 1:
        raise AlgorithmError(f"--gpus {gpus} must be ≥ 1")
    if cluster.intra_topology != "switch" or cluster.gpu not in GPU_ARCH:
        raise AlgorithmError(f"the NCCL model covers NVSwitch nodes of {', '.join(sorted(GPU_ARCH))}; cluster "
                             f"{cluster.name!r} has {cluster.gpu} on a {cluster.intra_topology}")
    per_node = cluster.gpus_per_node
    if gpus > per_node and gpus % per_node:
        raise AlgorithmError(f"--gpus {gpus} on {cluster.name!r} must be ≤ {per_node} or a multiple of {per_node} "
                             "(whole nodes)")
    nodes = max(1, gpus // per_node) if gpus > per_node else 1
    cc, links = GPU_ARCH[cluster.gpu]
    nic_gbps = cluster.inter.bandwidth_bytes_per_s / 1e9 if cluster.inter is not None else 0.0
    return NcclSystem(nodes=nodes, gpus_per_node=min(gpus, per_node), compute_capability=cc,
                      nvlinks_per_gpu=links, nics_per_node=cluster.nics_per_node, nic_bandwidth_gbps=nic_gbps,
                      cpu_vendor=CPU_VENDOR.get(cluster.name, "intel"), collnet=collnet)
