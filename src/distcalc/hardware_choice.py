"""One hardware vocabulary for every command: ``--cluster`` (a preset name or a YAML cluster file) and
``--gpu`` (a GPU preset replacing the cluster's), resolved into a cluster, a GPU and where each came from.

Rule for ``--gpu``: a node is built for one in-node link (an HGX baseboard's NVSwitch generation, a TPU
slice's ICI), so a GPU can replace the cluster's only if its own in-node link (``intra_link`` in gpus.yaml,
from its datasheet) is the cluster's; then the cluster's network remains as it is. Otherwise the GPU is
refused and the clusters that can host it are named. Without ``--cluster``, ``--gpu`` picks the first
cluster preset built around that GPU (or, failing that, around its in-node link).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from distcalc.cluster import ClusterSpec, cluster_from_entry, list_clusters, load_cluster
from distcalc.errors import ConfigError
from distcalc.hardware import GpuSpec, load_gpu
from distcalc.preset_files import read_presets
from distcalc.units import format_rate, format_time

#: The cluster used when neither --cluster nor --gpu is given (one node of 8 H100 SXM, NDR InfiniBand).
DEFAULT_CLUSTER = "dgx-h100"


@dataclass(frozen=True)
class Hardware:
    """The resolved cluster and GPU, and where each value came from (preset, file, override, default)."""

    cluster: ClusterSpec
    gpu: GpuSpec
    cluster_origin: str
    gpu_origin: str
    overrides: tuple[str, ...] = ()

    def headline(self, gpus: int | None = None) -> str:
        """``8× h100-sxm (preset of dgx-h100) · in node nvlink4 450 GB/s, 3 us · across nodes …``."""
        c = self.cluster
        count = f"{gpus}× " if gpus else ""
        intra = f"in node {c.intra.name} {format_rate(c.intra.bandwidth_bytes_per_s)}/dir, α {format_time(c.intra.latency_s)}"
        if c.inter is None or c.nics_per_node == 0:
            inter = "no inter-node network"
        else:
            inter = (f"across nodes {c.nics_per_node}× {c.inter.name} NIC of {format_rate(c.inter.bandwidth_bytes_per_s)}"
                     f" per node of {c.gpus_per_node} GPUs = {format_rate(c.inter_bandwidth_per_gpu_bytes_per_s)}/GPU, "
                     f"α {format_time(c.inter.latency_s)}")
        note = f"; overrides: {', '.join(self.overrides)}" if self.overrides else ""
        return (f"hardware: {count}{self.gpu.name} ({self.gpu_origin}) on {c.name} ({self.cluster_origin}): "
                f"{intra}; {inter}{note}")

    def describe(self) -> dict[str, Any]:
        """JSON-friendly provenance (the ``hardware`` key of ``--json``)."""
        return {"cluster": self.cluster.name, "cluster_origin": self.cluster_origin, "gpu": self.gpu.name,
                "gpu_origin": self.gpu_origin, "overrides": list(self.overrides),
                "intra_link": self.cluster.intra.name,
                "inter_link": None if self.cluster.inter is None else self.cluster.inter.name}


def gpu_intra_link(gpu: str) -> str | None:
    """The in-node link a GPU preset uses (gpus.yaml ``intra_link``), or None when not stated."""
    return read_presets("gpus.yaml")[load_gpu(gpu).name].get("intra_link")


def clusters_hosting(gpu: str) -> list[str]:
    """Cluster presets whose GPU is ``gpu``, then those whose in-node link is the GPU's."""
    clusters = read_presets("clusters.yaml")
    link = gpu_intra_link(gpu)
    own = [name for name, entry in clusters.items() if entry["gpu"] == gpu]
    same_link = [name for name, entry in clusters.items() if link and entry["intra"] == link and name not in own]
    return own + same_link


def load_cluster_file(path: Path, **overrides: Any) -> ClusterSpec:
    """A cluster described in a YAML file with the keys of a ``clusters.yaml`` entry (``gpu``,
    ``gpus_per_node``, ``intra``, ``inter``, ``nics_per_node`` …); links by preset name or as mappings."""
    try:
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"cannot read cluster file {str(path)!r}: {error}") from error
    if not isinstance(entry, dict) or not {"gpu", "gpus_per_node", "intra"} <= entry.keys():
        raise ConfigError(f"cluster file {str(path)!r} needs the keys gpu, gpus_per_node and intra "
                          "(and usually inter, nics_per_node), as an entry of distcalc presets clusters")
    try:
        return cluster_from_entry(str(entry.get("name", path.stem)), entry, **overrides)
    except (KeyError, TypeError, ValueError) as error:
        if isinstance(error, ConfigError):
            raise
        raise ConfigError(f"cluster file {str(path)!r}: {error}") from error


def _check_hosts(cluster: ClusterSpec, gpu: str, origin: str) -> None:
    link = gpu_intra_link(gpu)
    if link is None or link == cluster.intra.name:
        return
    hosts = clusters_hosting(gpu)
    where = f"; clusters that host it: {', '.join(hosts)}" if hosts else ""
    raise ConfigError(f"--gpu {gpu}: cluster {cluster.name} ({origin}) cannot host it: its in-node link is "
                      f"{cluster.intra.name}, the GPU's is {link}{where} (or describe the cluster in a YAML file)")


def resolve_hardware(cluster: str | None, gpu: str | None, *, allow_files: bool = True,
                     **overrides: Any) -> Hardware:
    """The cluster (``cluster``: preset name or, with ``allow_files``, a YAML file; None:
    :data:`DEFAULT_CLUSTER`, or the first cluster hosting ``gpu``) with ``gpu`` replacing its GPU;
    ``overrides`` are :func:`load_cluster`'s keyword overrides (``gpus_per_node``,
    ``intra_bandwidth_bytes_per_s`` …; None values are ignored). A server passes ``allow_files=False``: it
    never reads a path it is sent."""
    given = {k: v for k, v in overrides.items() if v is not None}
    gpu_key = load_gpu(gpu).name if gpu else None
    if cluster is None:
        if gpu_key is None:
            spec, origin = load_cluster(DEFAULT_CLUSTER, **given), "default"
        else:
            hosts = clusters_hosting(gpu_key)
            if not hosts:
                raise ConfigError(f"--gpu {gpu_key}: no cluster preset hosts it; give --cluster (a preset or a "
                                  f"YAML file); presets: {', '.join(list_clusters())}")
            spec, origin = load_cluster(hosts[0], **given), f"chosen for --gpu {gpu_key}"
    elif allow_files and Path(cluster).expanduser().is_file():
        path = Path(cluster).expanduser()
        spec, origin = load_cluster_file(path, **given), f"file {path.name}"
    else:
        spec, origin = load_cluster(cluster, **given), "preset"
    gpu_origin = f"preset of {spec.name}"
    if gpu_key is not None and gpu_key != spec.gpu:
        _check_hosts(spec, gpu_key, origin)
        gpu_origin = f"--gpu, replacing {spec.gpu}"
        spec = spec.model_copy(update={"gpu": gpu_key})
    labels = {"gpus_per_node": "gpus-per-node", "intra_bandwidth_bytes_per_s": "intra-bandwidth",
              "intra_latency_s": "intra-latency", "inter_bandwidth_bytes_per_s": "inter-bandwidth",
              "inter_latency_s": "inter-latency"}
    return Hardware(cluster=spec, gpu=load_gpu(spec.gpu), cluster_origin=origin, gpu_origin=gpu_origin,
                    overrides=tuple(f"--{labels.get(k, k)}" for k in given))
