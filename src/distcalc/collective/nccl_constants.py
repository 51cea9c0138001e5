"""NCCL's tuning constants, per NCCL release, as data (re-expressed from NCCL's published source, not copied).

Sources (github.com/NVIDIA/nccl, tags ``v2.18.5-1``, ``v2.20.5-1`` and ``v2.26.2-1``):

* ``src/graph/tuning.cc``: ``baseLat`` (µs per algorithm × protocol), ``hwLat`` (µs per hop on NVLink, PCI,
  network), ``llMaxBws`` (LL bandwidth cap, GB/s), ``perChMaxRingLL128Bws``, ``perChMaxTreeLL128Bws``,
  ``perChMaxTreeBws`` (per-channel caps by GPU generation × 1/2/>2 nodes), ``treeCorrectionFactor``, the net
  post overhead (1 µs Intel/other, 2 µs AMD, ×3 for Simple) and the ring plateau factor 1.4 (sm80+).
* ``src/graph/topo.h``: NCCL's per-NVLink bandwidth (GB/s) per compute capability (sm80 20.0; sm90 20.0 in
  2.18.5, 20.6 in 2.20.5).
* ``src/graph/search.cc``: the channel speeds the topology search tries (intra-node and inter-node arrays,
  sm90 arrays).
* ``src/include/comm.h``/``devcomm.h``: thread thresholds (LL 8, LL128 8, Simple 64 bytes per thread; ring LL
  ×nRanks; CollNet 512), maximum threads per block (Simple 512, LL 512, LL128 640, NVLS/CollNet 640),
  ``MAXCHANNELS`` 32 (ring search limited to 16); ``src/transport/nvls.cc``: ``NCCL_NVLS_NCHANNELS`` 16.

What 2.26.2 changes against 2.20.5 for the collectives modelled here (same files at ``v2.26.2-1``): ``baseLat``
Tree/Simple 8.4 µs (was 0), ``hwLat`` Tree/Simple 4.0 µs on NVLink and PCI and 14 µs on the network (was 28 on
each), NVLS and NVLS-Tree 25 µs on NVLink (was 23); Ring/LL bus bandwidth ×0.5 (was ×1/4, or ×1/3 for one-node
AllGather/ReduceScatter/Broadcast) and Ring/LL128 ×0.92 at any GPUs per node (was 0.7 below two); Hopper's
one-node LL cap 141 GB/s (was 87.7); the sm90 intra-node speeds gain 11 GB/s; a ring AllReduce counts
2·(nNodes − 1) network steps (was 2·nNodes); NVLS-Tree's chunk starts at ``nvlsChunkSize``
(``NCCL_NVLS_CHUNKSIZE``, 128 KiB; ``src/transport/nvls.cc``) instead of one Simple step (512 KiB); Tree runs 640
threads (``NCCL_MAX_NTHREADS``) always; and ``src/enqueue.cc`` ``scheduleCollTasksToPlan`` splits an operation
over channels in traffic cells of ``MinTrafficPerChannel`` = 16 KiB, not with 2.20.5's 4 KiB Simple alignment;
its cost table offers NVLS AllGather/ReduceScatter only on one node of at most ``NCCL_MAX_NVLS_ARITY`` (32) ranks.
PAT (2.23+, AllGather/ReduceScatter with one GPU per node) is not modelled: those cases are refused under 2.26.2.

Units: µs for latencies and GB/s (1e9 B/s) for bandwidths, exactly as NCCL states them; the tuner converts.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from distcalc.errors import AlgorithmError


class NcclAlgo(str, enum.Enum):
    """NCCL's algorithms (values are the CLI spellings)."""

    TREE = "tree"
    RING = "ring"
    COLLNET_DIRECT = "collnet-direct"
    COLLNET_CHAIN = "collnet-chain"
    NVLS = "nvls"
    NVLS_TREE = "nvls-tree"


class NcclProto(str, enum.Enum):
    """NCCL's protocols: LL (8-byte flag+data stores), LL128 (128-byte lines, 120 B payload), Simple."""

    LL = "LL"
    LL128 = "LL128"
    SIMPLE = "Simple"


class NcclHw(str, enum.Enum):
    """The hop type ``hwLat`` is indexed by."""

    NVLINK = "nvlink"
    PCI = "pci"
    NET = "net"


class NcclVersion(str, enum.Enum):
    """NCCL releases whose tuning model is reproduced."""

    V2_18_5 = "2.18.5"
    V2_20_5 = "2.20.5"
    V2_26_2 = "2.26.2"


A, P = NcclAlgo, NcclProto
_PROTOS = (P.LL, P.LL128, P.SIMPLE)


def _table(rows: dict[NcclAlgo, tuple[float, float, float]]) -> dict[tuple[NcclAlgo, NcclProto], float]:
    return {(algo, proto): value for algo, triple in rows.items() for proto, value in zip(_PROTOS, triple)}


@dataclass(frozen=True)
class NcclConstants:
    """The numbers of one NCCL release's tuner (see the module docstring for file and variable names)."""

    version: NcclVersion
    base_latency_us: dict[tuple[NcclAlgo, NcclProto], float]
    hw_latency_us: dict[NcclHw, dict[tuple[NcclAlgo, NcclProto], float]]
    nvlink_bw_per_link: dict[int, float]  #: GB/s per NVLink by compute capability (topo.h)
    speeds_intra: tuple[float, ...]  #: search.cc speedArrayIntra (GB/s per channel)
    speeds_inter: tuple[float, ...]  #: search.cc speedArrayInter
    speeds_intra_sm90: tuple[float, ...]
    speeds_inter_sm90: tuple[float, ...]
    nvls_latency_from_hw: bool  #: 2.20.5: NVLS latency = hwLat (baseLat 0); 2.18.5: baseLat (+ net hop)
    nvls_bw_min_intra_inter: bool  #: 2.20.5: NVLS bw = min(bwIntra, bwInter)
    nvls_tree_ratio_5_6: bool  #: 2.20.5: NVLS-Tree algBw = busBw·5/6; 2.18.5: .70·n/(2(n−1))
    nvls_for_allgather_reducescatter: bool  #: 2.20.5 adds NVLS and CollNet-Direct to AllGather/ReduceScatter
    ring_fallback: bool  #: 2.20.5: a collective with nothing enabled falls back to Ring
    collnet_arity_latency_us: float  #: CollNet-Direct per-arity serialization (0.5 → 0.4 µs)
    nvls_even_channel_split: bool  #: 2.20.5 enqueue.cc splits NVLS work evenly over channels; 2.18.5 per loop
    #: Ring/LL bus-bandwidth share: (multi-node or AllReduce/Reduce, otherwise); tuning.cc "model refinements".
    ring_ll_share: tuple[float, float] = (1 / 4, 1 / 3)
    ring_ll128_one_gpu_factor: float = 0.7  #: Ring/LL128 efficiency with < 2 GPUs per node (0.92 otherwise)
    ll_max_bw_hopper_one_node: float = 87.7  #: llMaxBws[Hopper][1 node] (GB/s)
    nvls_tree_start_chunk_bytes: int = (4 << 20) // 8  #: NVLS-Tree's first chunk: NVLS_TREE_START_CHUNK_BYTES
    tree_max_threads: bool = False  #: 2.26.2 getAlgoInfo: "Tree now uses all threads always" (640)
    #: 2.26.2 scheduleCollTasksToPlan: an operation fills channels in traffic cells of ≥ this many bytes of data
    #: (MinTrafficPerChannel 16 KiB of traffic ÷ 2 traffic bytes per AllReduce byte); 0: 2.20.5's 4 KiB alignment.
    channel_cell_bytes: int = 0
    pat_not_modelled: bool = False  #: 2.23+ has PAT for AllGather/ReduceScatter at one GPU per node
    #: Ring AllReduce network steps: 2.18.5/2.20.5 count 2·nNodes, 2.26.2 2·(nNodes − 1) (tuning.cc nInterSteps)
    ring_allreduce_inter_steps_less_one: bool = False
    #: 2.26.2 updateCollCostTable: NVLS AllGather/ReduceScatter on one node of ≤ NCCL_MAX_NVLS_ARITY ranks only
    nvls_allgather_reducescatter_one_node: bool = False


#: llMaxBws[generation or CPU][1 node / 2 nodes / >2 nodes] (GB/s); single node: GPU generation, else CPU.
LL_MAX_BW = {"volta": (39.0, 39.0, 20.4), "ampere": (87.7, 22.5, 19.0), "hopper": (87.7, 22.5, 19.0),
             "intel": (39.0, 39.0, 20.4), "amd": (87.7, 22.5, 19.0)}
PER_CH_MAX_RING_LL128_BW = {"volta": (20.0, 20.0, 20.0), "ampere": (20.0, 20.0, 20.0),
                            "hopper": (36.7, 36.7, 36.7)}
PER_CH_MAX_TREE_LL128_BW = {"volta": (20.0, 20.0, 20.0), "ampere": (20.0, 20.0, 20.0),
                            "hopper": (36.7, 36.7, 29.0)}
PER_CH_MAX_TREE_BW = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0)}
#: treeCorrectionFactor[protocol][log2(nBytes / 64)] for 64 B … 256 MiB (index 0 … 22); 1 outside.
TREE_CORRECTION = {
    P.LL: (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0),
    P.LL128: (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0),
    P.SIMPLE: (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9),
}
NET_OVERHEAD_US = {"intel": 1.0, "amd": 2.0}  #: getNetOverhead; ×3 for Simple
SIMPLE_NET_OVERHEAD_FACTOR = 3.0
RING_PLATEAU_FACTOR = {"pre-sm80": 1.9, "sm80+": 1.4}
#: Bytes of work per thread before NCCL adds a thread/channel (comm.h), and maximum threads (devcomm.h).
THREAD_THRESHOLD = {P.LL: 8, P.LL128: 8, P.SIMPLE: 64}
COLLNET_THREAD_THRESHOLD = 512
MAX_THREADS = {P.LL: 512, P.LL128: 640, P.SIMPLE: 512}
NVLS_COLLNET_MAX_THREADS = 640
PCI_BW = 12.0  #: topo.h PCI_BW: Ring/Simple uses 256 threads at or below this ring bandwidth
MAX_CHANNELS = 32
RING_SEARCH_MAX_CHANNELS = MAX_CHANNELS // 2
NVLS_CHANNELS = 16  #: nvls.cc NCCL_NVLS_NCHANNELS default
NVLS_MAX_ARITY = 32  #: device.h NCCL_MAX_NVLS_ARITY (v2.26.2-1)
WARP_SIZE = 32
#: enqueue.cc computeColl, NVLS: chunk ≤ 128 KiB; 2.20.5 across nodes: 32 KiB when NCCL's NVLS bandwidth < 150
#: GB/s; then (multiple, smaller): chunk → smaller while nBytes < multiple × nChannels × nHeads × chunk.
NVLS_MAX_CHUNK_BYTES = 131072
NVLS_MULTINODE_SLOW_CHUNK_BYTES = 32768
NVLS_MULTINODE_SLOW_GBPS = 150.0
NVLS_CHUNK_SHRINK = ((64, 65536), (8, 32768), (2, 16384))
#: enqueue.cc computeColl, NVLS-Tree (both releases): the chunk starts at one Simple step (init.cc DEFAULT_BUFFSIZE
#: 4 MiB / NCCL_STEPS 8 = 512 KiB; chunkSteps is 1 outside Ring); 2.20.5 first caps it at 64 KiB from 4 nodes up
#: (NCCL_NVLSTREE_MAX_CHUNKSIZE, default -2); then (multiple, smaller): chunk → smaller while
#: nBytes < multiple × nChannels × nHeads × chunk.
NVLS_TREE_START_CHUNK_BYTES = (4 << 20) // 8
NVLS_TREE_MANY_NODES = 4
NVLS_TREE_MANY_NODES_CHUNK_BYTES = 65536
NVLS_TREE_CHUNK_SHRINK = ((32, 262144), (16, 131072), (4, 65536), (1, 32768))
#: enqueue.h NCCL_SIMPLE_ALIGNMENT = WARP_SIZE × 8 × 16 bytes (2.20.5): enqueue.cc addCBDCollToPlan rounds each
#: channel's share of a Simple-protocol operation up to this many bytes (capped by what is left), so a message below
#: 16 × 4 KiB runs on fewer channels than NCCL has; 2.18.5 has no per-channel split (all_reduce.h loops instead).
SIMPLE_CHANNEL_ALIGNMENT_BYTES = WARP_SIZE * 8 * 16
#: Peak NVLS all-reduce algbw on one 8-GPU H100 node, NCCL's maintainer (NVIDIA/nccl-tests #212, 2024-05-06).
NVLS_PEAK_ALGBW_8XH100_GBPS = 275.0

_NVLINK_18 = _table({A.TREE: (.6, 1.25, 4), A.RING: (.6, 1.9, 3.4), A.COLLNET_DIRECT: (0, 0, 8.0),
                     A.COLLNET_CHAIN: (0, 0, 4.75), A.NVLS: (0, 0, 0), A.NVLS_TREE: (0, 0, 0)})
_PCI_18 = _table({A.TREE: (1.0, 1.9, 6), A.RING: (1.0, 2.5, 5.7), A.COLLNET_DIRECT: (0, 0, 8.0),
                  A.COLLNET_CHAIN: (0, 0, 8.0), A.NVLS: (0, 0, 0), A.NVLS_TREE: (0, 0, 0)})
_NET_18 = _table({A.TREE: (5.0, 8.5, 14), A.RING: (2.7, 4.0, 14.0), A.COLLNET_DIRECT: (0, 0, 10.7),
                  A.COLLNET_CHAIN: (0, 0, 14), A.NVLS: (0, 0, 18), A.NVLS_TREE: (0, 0, 19)})
_NVLINK_20 = _table({A.TREE: (.6, 1.25, 28), A.RING: (.6, 1.9, 3.4), A.COLLNET_DIRECT: (0, 0, 3.7),
                     A.COLLNET_CHAIN: (0, 0, 2.8), A.NVLS: (0, 0, 23), A.NVLS_TREE: (0, 0, 23)})
_PCI_20 = _table({A.TREE: (1.0, 1.9, 28), A.RING: (1.0, 2.5, 5.7), A.COLLNET_DIRECT: (0, 0, 3.7),
                  A.COLLNET_CHAIN: (0, 0, 2.8), A.NVLS: (0, 0, 0), A.NVLS_TREE: (0, 0, 0)})
_NET_20 = _table({A.TREE: (5.0, 8.5, 28), A.RING: (2.7, 4.0, 14.0), A.COLLNET_DIRECT: (0, 0, 31),
                  A.COLLNET_CHAIN: (0, 0, 30), A.NVLS: (0, 0, 18), A.NVLS_TREE: (0, 0, 14)})

#: 2.26.2 hwLat: 2.20.5's with Tree/Simple 4.0 µs on NVLink and PCI, 14 on the network; NVLS(-Tree) 25 on NVLink.
_NVLINK_26 = {**_NVLINK_20, (A.TREE, P.SIMPLE): 4.0, (A.NVLS, P.SIMPLE): 25.0, (A.NVLS_TREE, P.SIMPLE): 25.0}
_PCI_26 = {**_PCI_20, (A.TREE, P.SIMPLE): 4.0}
_NET_26 = {**_NET_20, (A.TREE, P.SIMPLE): 14.0}

_SPEEDS_INTRA = (40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0)
_SPEEDS_INTER = (48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.4, 1.2,
                 0.24, 0.12)

CONSTANTS: dict[NcclVersion, NcclConstants] = {
    NcclVersion.V2_18_5: NcclConstants(
        version=NcclVersion.V2_18_5,
        base_latency_us=_table({A.TREE: (6.8, 14.0, 0), A.RING: (6.6, 14.0, 8.4),
                                A.COLLNET_DIRECT: (6.8, 14.0, 0), A.COLLNET_CHAIN: (6.8, 14.0, 0),
                                A.NVLS: (0, 0, 23.0), A.NVLS_TREE: (0, 0, 23.0)}),
        hw_latency_us={NcclHw.NVLINK: _NVLINK_18, NcclHw.PCI: _PCI_18, NcclHw.NET: _NET_18},
        nvlink_bw_per_link={70: 20.0, 80: 20.0, 90: 20.0},
        speeds_intra=_SPEEDS_INTRA, speeds_inter=_SPEEDS_INTER,
        speeds_intra_sm90=(60.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0),
        speeds_inter_sm90=(48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2, 0.24,
                           0.12),
        nvls_latency_from_hw=False, nvls_bw_min_intra_inter=False, nvls_tree_ratio_5_6=False,
        nvls_for_allgather_reducescatter=False, ring_fallback=False, collnet_arity_latency_us=0.5,
        nvls_even_channel_split=False),
    NcclVersion.V2_20_5: NcclConstants(
        version=NcclVersion.V2_20_5,
        base_latency_us=_table({A.TREE: (6.8, 14.0, 0), A.RING: (6.6, 14.0, 8.4),
                                A.COLLNET_DIRECT: (0, 0, 0), A.COLLNET_CHAIN: (0, 0, 0),
                                A.NVLS: (0, 0, 0), A.NVLS_TREE: (0, 0, 0)}),
        hw_latency_us={NcclHw.NVLINK: _NVLINK_20, NcclHw.PCI: _PCI_20, NcclHw.NET: _NET_20},
        nvlink_bw_per_link={70: 20.0, 80: 20.0, 90: 20.6},
        speeds_intra=_SPEEDS_INTRA, speeds_inter=_SPEEDS_INTER,
        speeds_intra_sm90=(60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 6.0, 3.0),
        speeds_inter_sm90=(48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5, 15.0, 12.0, 6.0, 3.0, 2.4, 1.2,
                           0.24, 0.12),
        nvls_latency_from_hw=True, nvls_bw_min_intra_inter=True, nvls_tree_ratio_5_6=True,
        nvls_for_allgather_reducescatter=True, ring_fallback=True, collnet_arity_latency_us=0.4,
        nvls_even_channel_split=True),
}
#: 2.26.2: 2.20.5 with the changes the module docstring lists.
CONSTANTS[NcclVersion.V2_26_2] = replace(
    CONSTANTS[NcclVersion.V2_20_5], version=NcclVersion.V2_26_2,
    base_latency_us=_table({A.TREE: (6.8, 14.0, 8.4), A.RING: (6.6, 14.0, 8.4), A.COLLNET_DIRECT: (0, 0, 0),
                            A.COLLNET_CHAIN: (0, 0, 0), A.NVLS: (0, 0, 0), A.NVLS_TREE: (0, 0, 0)}),
    hw_latency_us={NcclHw.NVLINK: _NVLINK_26, NcclHw.PCI: _PCI_26, NcclHw.NET: _NET_26},
    speeds_intra_sm90=(60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0),
    ring_ll_share=(0.5, 0.5), ring_ll128_one_gpu_factor=0.92, ll_max_bw_hopper_one_node=141.0,
    nvls_tree_start_chunk_bytes=128 << 10, tree_max_threads=True, channel_cell_bytes=(16 << 10) // 2,
    pat_not_modelled=True, ring_allreduce_inter_steps_less_one=True, nvls_allgather_reducescatter_one_node=True)
DEFAULT_VERSION = NcclVersion.V2_20_5


def parse_version(text: str | NcclVersion) -> NcclVersion:
    """``"2.18.5"`` → :class:`NcclVersion`; :class:`AlgorithmError` naming the valid releases."""
    if isinstance(text, NcclVersion):
        return text
    cleaned = str(text).strip().lstrip("v").removesuffix("-1")
    for version in NcclVersion:
        if version.value == cleaned:
            return version
    raise AlgorithmError(f"NCCL version {text!r} is not modelled: valid are {', '.join(v.value for v in NcclVersion)}")
