"""Opt-in: price the step's collectives with NCCL's own model (``--collective-model nccl``).

A :class:`NcclPricedCluster` is a cluster whose collectives (AllReduce, ReduceScatter, AllGather, Broadcast,
Reduce) are priced by :func:`distcalc.collective.nccl_tuner.nccl_estimate` on the group each message runs on:
``nodes`` and ``members_per_node`` of its placement (:mod:`distcalc.placement`), the cluster's GPU generation
and NVLink ports, and the NIC share the group's members own (``nics_per_node · members / gpus_per_node``, at
least one). Everything NCCL's tuner does not price — Send/Recv, AllToAll, Gather, Scatter, TPU tori, GPUs the
NCCL model has no entry for — keeps the default α-β price. The default (``alpha-beta``) is untouched: this
module is only reached when the option is set.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from pydantic import Field

from distcalc.cluster import ClusterSpec
from distcalc.collective.nccl_constants import DEFAULT_VERSION, NcclVersion
from distcalc.collective.nccl_graph import CPU_VENDOR, GPU_ARCH, NcclSystem
from distcalc.collective.nccl_tuner import TUNED_KINDS, nccl_estimate
from distcalc.collective.types import CollectiveKind
from distcalc.placement import GroupPlacement, algorithm_name, effective_time_elementwise_s

COLLECTIVE_MODELS = ("alpha-beta", "nccl")


class NcclPricedCluster(ClusterSpec):
    """A cluster whose collectives NCCL's tuning model prices (module docstring)."""

    nccl_version: NcclVersion = Field(DEFAULT_VERSION, description="NCCL release whose tuner is reproduced")

    def __hash__(self) -> int:
        return hash((self.name, self.gpus_per_node, self.intra, self.inter, self.nccl_version))

    def collective_time_s(self, kind: Any, sizes: np.ndarray, placement: GroupPlacement) -> tuple[np.ndarray, str]:
        """:func:`nccl_time_s` on this cluster (what :func:`distcalc.analyze.comm.message_times` calls)."""
        return nccl_time_s(self, kind, sizes, placement)


def with_nccl_model(cluster: ClusterSpec, version: NcclVersion = DEFAULT_VERSION) -> ClusterSpec:
    """``cluster`` priced by NCCL's model (unchanged where the model has no data: a torus or another GPU)."""
    if cluster.intra_topology != "switch" or cluster.gpu not in GPU_ARCH:
        return cluster
    fields = {name: getattr(cluster, name) for name in ClusterSpec.model_fields}
    return NcclPricedCluster(**fields, nccl_version=version)


def placement_system(cluster: ClusterSpec, placement: GroupPlacement) -> NcclSystem:
    """The NCCL system one group spans: its nodes, its members per node, their NICs."""
    cc, links = GPU_ARCH[cluster.gpu]
    nics = 0
    nic_gbps = 0.0
    if placement.nodes > 1 and cluster.inter is not None:
        nics = max(1, round(cluster.nics_per_node * placement.members_per_node / cluster.gpus_per_node))
        nic_gbps = cluster.inter.bandwidth_bytes_per_s / 1e9
    return NcclSystem(nodes=placement.nodes, gpus_per_node=placement.members_per_node, compute_capability=cc,
                      nvlinks_per_gpu=links, nics_per_node=nics, nic_bandwidth_gbps=nic_gbps,
                      cpu_vendor=CPU_VENDOR.get(cluster.name, "intel"))


@lru_cache(maxsize=65536)
def _priced(system: NcclSystem, kind: CollectiveKind, size_bytes: float, version: NcclVersion) -> tuple[float, str]:
    estimate = nccl_estimate(system, kind, size_bytes, version)
    return estimate.time_s, f"nccl {estimate.algorithm.value}/{estimate.protocol.value}"


def nccl_time_s(cluster: NcclPricedCluster, kind: Any, sizes: np.ndarray,
                placement: GroupPlacement) -> tuple[np.ndarray, str]:
    """Time of each size on ``placement`` and the algorithm label of the first one (for reports)."""
    name = getattr(kind, "value", str(kind))
    tuned = {k.value for k in TUNED_KINDS}
    if name not in tuned or placement.topology is None or placement.members_per_node * placement.nodes != \
            placement.size:
        t, algorithm = effective_time_elementwise_s(kind, sizes, placement)
        return t, algorithm_name(algorithm, 0)
    system = placement_system(cluster, placement)
    kind_enum = CollectiveKind(name)
    unique, inverse = np.unique(np.asarray(sizes, dtype=float), return_inverse=True)
    priced = [_priced(system, kind_enum, float(s), cluster.nccl_version) for s in unique]
    times = np.array([t for t, _ in priced])[inverse]
    return times, priced[0][1] if priced else "none"
