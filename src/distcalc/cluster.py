"""Clusters: a GPU preset in nodes, an intra-node link (NVSwitch or a TPU torus) and an inter-node fabric.

Presets live in ``presets/clusters.yaml`` (composition) and ``presets/links.yaml`` (link numbers with
their sources). Bandwidths are per direction per GPU port (docs/design.md §2). Each link also carries the NCCL
efficiency model of :func:`effective_collective_time_s`: η (fraction of the link a collective's bandwidth
term achieves) and the pipeline chunk C whose fill a chunked ring pays once.

Inter-node bandwidth per GPU is the node's NIC bandwidth shared by its GPUs:
``B_inter,GPU = nics_per_node · B_NIC / gpus_per_node`` (all GPUs of a node are in some group of the
same dimension that crosses nodes at the same time; rail-optimised fabric, full bisection assumed).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from distcalc.preset_files import preset_entry, preset_names
from distcalc.units import parse_rate, parse_size, parse_time


class LinkSpec(BaseModel):
    """One link type: per-direction bandwidth, per-step latency and the NCCL efficiency parameters."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="preset name, e.g. nvlink3")
    description: str = Field("", description="what the link is")
    bandwidth_bytes_per_s: float = Field(gt=0, description="B, per direction per GPU port, bytes/s")
    latency_s: float = Field(ge=0, description="α, seconds per collective step")
    efficiency: float = Field(1.0, gt=0, le=1, description="η, achieved fraction of B in a collective")
    pipeline_chunk_bytes: float = Field(0.0, ge=0, description="C, NCCL pipeline chunk (fill cost)")
    collective_overhead_s: float = Field(
        0.0, ge=0, description="per-collective time beyond the α-β cost measured in back-to-back collectives "
        "(launch and stream synchronisation of torch.distributed NCCL calls); 0: not measured")
    alltoall_efficiency: float | None = Field(
        None, gt=0, le=1, description="η of AllToAll where measured apart (NCCL's all-to-all reaches a lower "
        "fraction of B than its ring collectives on NVSwitch); None: η")
    alltoall_latency_s: float | None = Field(
        None, ge=0, description="α of AllToAll per peer where measured apart: NCCL's all-to-all posts one send "
        "and one receive per peer, time = (N−1)·α_a2a + f·M/(η_a2a·B); None: the link's α once")
    source: str = Field("", description="datasheet / paper / measurement the numbers come from")


class ClusterSpec(BaseModel):
    """A cluster: ``gpu`` preset, ``gpus_per_node`` per node (a TPU slice is one node), links, NICs."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="preset name")
    description: str = Field("", description="what the cluster is")
    gpu: str = Field(description="GPU preset name (gpus.yaml)")
    gpus_per_node: int = Field(gt=0, description="GPUs in one node / NVLink or ICI domain")
    intra: LinkSpec = Field(description="link inside a node")
    inter: LinkSpec | None = Field(None, description="NIC link between nodes")
    nics_per_node: int = Field(0, ge=0, description="compute NICs per node")
    intra_topology: str = Field("switch", description="switch (NVSwitch) or torus (TPU ICI)")
    shape: tuple[int, ...] | None = Field(None, description="torus shape of one node (intra_topology torus)")
    in_network_reduction: bool = Field(False, description="NVLS/SHARP reductions inside the node switch")
    collective_algorithm: str = Field(
        "auto", description="algorithm the communication library uses where valid (NCCL: ring), else auto")
    source: str = Field("", description="where the composition comes from")

    @property
    def inter_bandwidth_per_gpu_bytes_per_s(self) -> float:
        """``nics_per_node · B_NIC / gpus_per_node`` (0 without an inter-node link)."""
        if self.inter is None or self.nics_per_node == 0:
            return 0.0
        return self.nics_per_node * self.inter.bandwidth_bytes_per_s / self.gpus_per_node

    def describe(self) -> dict[str, Any]:
        """JSON-friendly summary."""
        return {
            "name": self.name, "gpu": self.gpu, "gpus_per_node": self.gpus_per_node,
            "intra": {"link": self.intra.name, "bandwidth_bytes_per_s": self.intra.bandwidth_bytes_per_s,
                      "latency_s": self.intra.latency_s, "efficiency": self.intra.efficiency},
            "inter": None if self.inter is None else {
                "link": self.inter.name, "bandwidth_bytes_per_s": self.inter.bandwidth_bytes_per_s,
                "latency_s": self.inter.latency_s, "efficiency": self.inter.efficiency,
                "nics_per_node": self.nics_per_node,
                "bandwidth_per_gpu_bytes_per_s": self.inter_bandwidth_per_gpu_bytes_per_s},
            "intra_topology": self.intra_topology, "shape": list(self.shape) if self.shape else None,
        }


def list_links() -> tuple[str, ...]:
    """Names of the link presets."""
    return preset_names("links.yaml")


def list_clusters() -> tuple[str, ...]:
    """Names of the cluster presets."""
    return preset_names("clusters.yaml")


def _with_overrides(link: LinkSpec, bandwidth_bytes_per_s: float | None, latency_s: float | None) -> LinkSpec:
    """``link`` with the given bandwidth and/or latency replaced (None keeps the preset's value)."""
    update = {k: v for k, v in (("bandwidth_bytes_per_s", bandwidth_bytes_per_s), ("latency_s", latency_s))
              if v is not None}
    return link.model_copy(update=update) if update else link


def load_link(name: str | dict[str, Any]) -> LinkSpec:
    """The link preset ``name`` (or a mapping with the preset keys, from a cluster file); :class:`ConfigError`
    listing the valid names."""
    if isinstance(name, dict):
        key, entry = str(name.get("name", "custom-link")), name
    else:
        key, entry = preset_entry("links.yaml", "link", name)
    return LinkSpec(
        name=key, description=entry.get("description", ""),
        bandwidth_bytes_per_s=parse_rate(entry["bandwidth"]), latency_s=parse_time(entry["latency"]),
        efficiency=float(entry.get("efficiency", 1.0)),
        pipeline_chunk_bytes=float(parse_size(entry.get("pipeline_chunk", 0), allow_zero=True)),
        collective_overhead_s=parse_time(entry["collective_overhead"]) if "collective_overhead" in entry else 0.0,
        alltoall_efficiency=float(entry["alltoall_efficiency"]) if "alltoall_efficiency" in entry else None,
        alltoall_latency_s=parse_time(entry["alltoall_latency"]) if "alltoall_latency" in entry else None,
        source=entry.get("source", ""),
    )


@lru_cache(maxsize=128)
def load_cluster(name: str, *, gpu: str | None = None, intra_bandwidth_bytes_per_s: float | None = None,
                 intra_latency_s: float | None = None, inter_bandwidth_bytes_per_s: float | None = None,
                 inter_latency_s: float | None = None, gpus_per_node: int | None = None) -> ClusterSpec:
    """The cluster preset ``name`` with optional overrides (the CLI's ``--gpu``, ``--intra-bandwidth``,
    ``--intra-latency``, ``--inter-bandwidth`` (per NIC), ``--inter-latency``, ``--gpus-per-node``).
    The presets are parsed once per process and a :class:`ClusterSpec` is frozen, so each (name, overrides)
    is built once (bounded cache) and the same spec returned after."""
    key, entry = preset_entry("clusters.yaml", "cluster", name)
    return cluster_from_entry(key, entry, gpu=gpu, intra_bandwidth_bytes_per_s=intra_bandwidth_bytes_per_s,
                              intra_latency_s=intra_latency_s, inter_bandwidth_bytes_per_s=inter_bandwidth_bytes_per_s,
                              inter_latency_s=inter_latency_s, gpus_per_node=gpus_per_node)


def cluster_from_entry(key: str, entry: dict[str, Any], *, gpu: str | None = None,
                       intra_bandwidth_bytes_per_s: float | None = None, intra_latency_s: float | None = None,
                       inter_bandwidth_bytes_per_s: float | None = None, inter_latency_s: float | None = None,
                       gpus_per_node: int | None = None) -> ClusterSpec:
    """A cluster from one ``clusters.yaml``-style entry (a preset's, or a user's cluster file); links are
    preset names or mappings with the ``links.yaml`` keys."""
    intra = _with_overrides(load_link(entry["intra"]), intra_bandwidth_bytes_per_s, intra_latency_s)
    inter = (_with_overrides(load_link(entry["inter"]), inter_bandwidth_bytes_per_s, inter_latency_s)
             if entry.get("inter") else None)
    per_node = int(gpus_per_node or entry["gpus_per_node"])
    nics = int(entry.get("nics_per_node", 0))
    if gpus_per_node is not None and nics == int(entry["gpus_per_node"]):
        nics = per_node  # one NIC per GPU stays one NIC per GPU
    return ClusterSpec(
        name=key, description=entry.get("description", ""), gpu=str(gpu or entry["gpu"]).lower(),
        gpus_per_node=per_node, intra=intra, inter=inter, nics_per_node=nics,
        intra_topology=entry.get("intra_topology", "switch"),
        shape=tuple(entry["shape"]) if entry.get("shape") and gpus_per_node is None else None,
        in_network_reduction=bool(entry.get("in_network_reduction", False)),
        collective_algorithm=str(entry.get("collective_algorithm", "auto")), source=entry.get("source", ""),
    )


def custom_cluster(gpu: str, gpus_per_node: int, intra: LinkSpec, inter: LinkSpec | None,
                   nics_per_node: int | None = None) -> ClusterSpec:
    """A cluster built from parts (no preset)."""
    return ClusterSpec(name="custom", gpu=gpu, gpus_per_node=gpus_per_node, intra=intra, inter=inter,
                       nics_per_node=gpus_per_node if nics_per_node is None else nics_per_node)
