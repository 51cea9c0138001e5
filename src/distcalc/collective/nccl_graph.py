"""The channel graphs NCCL's topology search finds on an NVSwitch node (plus rail NICs), re-expressed.

NCCL (``src/graph/search.cc``, ``src/graph/connect.cc``, ``src/init.cc``; tags v2.18.5-1 / v2.20.5-1) searches,
per algorithm, for the largest ``nChannels × speed`` that the links carry, trying the speeds of its speed
arrays from the fastest down. On the systems distcalc's cluster presets describe (every GPU one NVLink port
of ``links × NVLINK_BW`` into an NVSwitch; rail NICs) the outcome is closed-form:

* **Ring / Tree** (a chain through every GPU: each channel takes ``s`` in and out of every GPU's NVLink port
  and, across nodes, of one NIC): channels ``= min(16, ⌊L/s⌋, nics·⌊B_nic/s⌋)``; the search keeps the
  best product, stops as soon as it reaches the GPU's NVLink total, and stops lowering the speed once the
  next speed is ≤ 0.49 of the best found. The ring is then doubled (``dupChannels``) unless its speed is
  < 25 GB/s, or on sm90 < 50 GB/s with > 4 channels. The communicator then runs twice the graph's channels
  (``ncclTopoPostset``: min(32, 2·channels)), and sm90 multi-node rings faster than 45 GB/s twice that again
  (connect.cc, "4 compute channels per search channel"); the tuner's bandwidth uses the graph's channels. The tree graph is searched with the
  ring's channel count; on these systems it finds the same product (simplification, stated).
* **NVLS** (sm90 + NVSwitch only, and more than two GPUs in the node: ``src/transport/nvls.cc``
  ``ncclNvlsInit`` leaves NVLS off when ``gpuCount <= 2``, both releases): one channel per GPU of the node (the
  "head"); the head's port carries ``2s`` and every other GPU's ``s``, so ``(g + 1)·s ≤ L``.
  2.20.x's ``ncclNvlsInit`` also returns early when ``comm->nNodes > 1``, but it runs before ``initTransportsRank``
  counts the nodes (v2.20.5 ``src/init.cc``: ``ncclNvlsInit`` at line 1010, ``comm->nNodes++`` at line 1084, the
  communicator zero-allocated), so that guard never fires and NVLS / NVLS-Tree stay available across nodes in
  2.20.5 as in 2.18.5 (2.21 removed the guard); the graphs here follow what runs, not the guard.
* NET nodes are removed when the communicator fits in one node (``ncclTopoTrimSystem``), so a single node
  uses the intra-node speed arrays and a multi-node communicator the inter-node ones.

Limits (say so, don't pretend): PCIe-only nodes, partial NVLink meshes, NIC-to-GPU PCIe paths and the
CollNet graph are not searched; CollNet uses the ring graph's channels and speeds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from distcalc.collective.nccl_constants import (
    CONSTANTS, MAX_CHANNELS, NVLS_CHANNELS, RING_SEARCH_MAX_CHANNELS, NcclAlgo, NcclConstants, NcclVersion,
)
from distcalc.errors import AlgorithmError

#: Compute capability and NVLink count per GPU preset (datasheets: A100 SXM4 = sm80, 12 NVLink3 links;
#: H100 SXM5 and H200 = sm90, 18 NVLink4 links).
GPU_ARCH = {"a100-40gb": (80, 12), "a100-80gb": (80, 12), "h100-sxm": (90, 18), "h200": (90, 18)}
#: Host CPU vendor per cluster preset (NCCL's LL cap and net overhead depend on it): DGX A100 has two AMD
#: EPYC 7742 (DGX A100 datasheet); DGX H100 two Intel Xeon 8480C (DGX H100 datasheet); HGX H200 reference
#: servers are taken as Intel (assumption). Unknown clusters: Intel (NCCL's "other" value equals Intel's).
CPU_VENDOR = {"dgx-a100": "amd", "dgx-h100": "intel", "hgx-h200": "intel"}


@dataclass(frozen=True)
class NcclSystem:
    """What NCCL's tuner sees: nodes × GPUs per node, the GPU generation, NVLink ports, NICs and host CPU."""

    nodes: int
    gpus_per_node: int
    compute_capability: int  #: 80 (Ampere), 90 (Hopper)
    nvlinks_per_gpu: int
    nics_per_node: int = 0
    nic_bandwidth_gbps: float = 0.0  #: GB/s per NIC per direction (NCCL's unit: 1e9 B/s)
    nvswitch: bool = True
    cpu_vendor: str = "intel"
    collnet: bool = False  #: SHARP-capable fabric (CollNet algorithms enabled)

    @property
    def ranks(self) -> int:
        return self.nodes * self.gpus_per_node

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.gpus_per_node < 1:
            raise AlgorithmError(f"NCCL system needs ≥ 1 node and ≥ 1 GPU per node, got {self.nodes}×"
                                 f"{self.gpus_per_node}")
        if self.compute_capability not in (70, 80, 90):
            raise AlgorithmError(f"compute capability {self.compute_capability} is not in NCCL's tuning "
                                 "tables of the modelled releases: valid are 70, 80, 90")
        if self.nodes > 1 and (self.nics_per_node < 1 or self.nic_bandwidth_gbps <= 0):
            raise AlgorithmError(f"{self.nodes} nodes need NICs: nics_per_node={self.nics_per_node}, "
                                 f"nic_bandwidth={self.nic_bandwidth_gbps} GB/s")


@dataclass(frozen=True)
class NcclGraph:
    """One algorithm's graph: channels and per-channel speed inside and between nodes (GB/s)."""

    algorithm: NcclAlgo
    channels: int
    bw_intra_gbps: float
    bw_inter_gbps: float

    @property
    def bus_bw_gbps(self) -> float:
        return self.channels * self.bw_intra_gbps


def nvlink_total_gbps(system: NcclSystem, constants: NcclConstants) -> float:
    """L: one GPU's NVLink port into the switch, per direction, in NCCL's units (links × NVLINK_BW)."""
    return system.nvlinks_per_gpu * constants.nvlink_bw_per_link[system.compute_capability]


def _speeds(system: NcclSystem, constants: NcclConstants) -> tuple[float, ...]:
    sm90 = system.compute_capability >= 90
    if system.nodes == 1:
        return constants.speeds_intra_sm90 if sm90 else constants.speeds_intra
    return constants.speeds_inter_sm90 if sm90 else constants.speeds_inter


def _chain_channels(system: NcclSystem, nvl: float, speed: float) -> int:
    channels = min(RING_SEARCH_MAX_CHANNELS, math.floor(nvl / speed + 1e-9))
    if system.nodes > 1:
        channels = min(channels, system.nics_per_node * math.floor(system.nic_bandwidth_gbps / speed + 1e-9))
    return channels


def ring_graph(system: NcclSystem, constants: NcclConstants) -> NcclGraph:
    """The ring search's outcome (module docstring), duplication included."""
    nvl = nvlink_total_gbps(system, constants)
    max_bw = nvl if system.nodes == 1 else min(nvl, system.nic_bandwidth_gbps)
    best_channels, best_speed = 0, 0.0
    for speed in (s for s in _speeds(system, constants) if s <= max_bw):
        if best_channels and speed / best_speed <= 0.49:
            break
        channels = _chain_channels(system, nvl, speed)
        if channels >= 1 and channels * speed > best_channels * best_speed:
            best_channels, best_speed = channels, speed
        if best_channels * best_speed >= nvl:
            break
    if best_channels == 0:
        raise AlgorithmError("NCCL's ring search finds no channel on this system")
    channels, speed = best_channels, best_speed
    sm90 = system.compute_capability > 80
    if speed >= 25.0 and not (sm90 and speed < 50.0 and channels > 4):
        doubled = min(2 * channels, RING_SEARCH_MAX_CHANNELS)
        speed /= math.ceil(doubled / channels)
        channels = doubled
    return NcclGraph(NcclAlgo.RING, channels, speed, speed)


def communicator_channels(system: NcclSystem, ring: NcclGraph) -> int:
    """comm->nChannels: ``ncclTopoPostset`` duplicates the ring graph's channels (min(32, 2·channels)), and
    doubles them once more on sm90 multi-node rings faster than 45 GB/s (connect.cc)."""
    channels = min(MAX_CHANNELS, 2 * ring.channels)
    if system.compute_capability == 90 and system.nodes > 1 and ring.bw_intra_gbps > 45.0 \
            and 2 * channels <= MAX_CHANNELS:
        channels *= 2
    return channels


def nvls_graph(system: NcclSystem, constants: NcclConstants) -> NcclGraph | None:
    """NVLS graph (None where NCCL has no NVLS: before sm90, without an NVSwitch, or with ≤ 2 GPUs per node)."""
    if system.compute_capability < 90 or not system.nvswitch or system.gpus_per_node <= 2:
        return None
    nvl = nvlink_total_gbps(system, constants)
    g = system.gpus_per_node
    intra = next((s for s in _speeds(system, constants) if (g + 1) * s <= nvl + 1e-9), None)
    if intra is None:
        return None
    inter = intra
    if system.nodes > 1:
        per_head = system.nics_per_node * system.nic_bandwidth_gbps / g
        inter = next((s for s in _speeds(system, constants) if s <= per_head + 1e-9), intra)
    return NcclGraph(NcclAlgo.NVLS, g, intra, inter)


@lru_cache(maxsize=1024)
def graphs(system: NcclSystem, version: NcclVersion) -> dict[NcclAlgo, NcclGraph]:
    """Every algorithm's graph on ``system`` (absent = not available there; cached: do not modify)."""
    constants = CONSTANTS[version]
    ring = ring_graph(system, constants)
    out = {NcclAlgo.RING: ring, NcclAlgo.TREE: NcclGraph(NcclAlgo.TREE, ring.channels, ring.bw_intra_gbps,
                                                         ring.bw_inter_gbps)}
    nvls = nvls_graph(system, constants)
    if nvls is not None:
        out[NcclAlgo.NVLS] = nvls
        out[NcclAlgo.NVLS_TREE] = NcclGraph(NcclAlgo.NVLS_TREE, nvls.channels, nvls.bw_intra_gbps,
                                            nvls.bw_inter_gbps)
    if system.collnet:
        for algo in (NcclAlgo.COLLNET_DIRECT, NcclAlgo.COLLNET_CHAIN):
            out[algo] = NcclGraph(algo, ring.channels, ring.bw_intra_gbps, ring.bw_inter_gbps)
    return out


__all__ = ["CPU_VENDOR", "GPU_ARCH", "NVLS_CHANNELS", "NcclGraph", "NcclSystem", "communicator_channels",
           "graphs", "nvlink_total_gbps", "nvls_graph", "ring_graph"]
