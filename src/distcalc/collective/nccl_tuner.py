"""NCCL's own cost model and choice: per (algorithm, protocol) latency and bandwidth, the pick, the channels.

Re-expressed from NCCL's published source (github.com/NVIDIA/nccl, tags v2.18.5-1 and v2.20.5-1):
``src/graph/tuning.cc`` (``ncclTopoTuneModel``: bus bandwidth per algorithm/protocol from the graph's
``nChannels × speed``, the LL/LL128/Tree caps and efficiencies, the bus→algorithm bandwidth ratio, the
latency sums; ``ncclTopoGetAlgoTime``: ``time = latency + nBytes / bandwidth`` with the Tree correction and the
ring plateau), ``src/enqueue.cc`` (``getAlgoInfo``: the fastest enabled pair wins; ring/tree channels and
threads shrink while ``nBytes < channels × threads × threadThreshold``; NVLS runs ``NCCL_NVLS_NCHANNELS``).
Constants: :mod:`distcalc.collective.nccl_constants`; graphs: :mod:`distcalc.collective.nccl_graph`.

distcalc's ``time_s`` is NCCL's model time with the bandwidth of the channels NCCL actually launches
(``bw · launched / comm channels``, the same scaling NCCL applies to aggregated operations), except for an
NVLS / NVLS-Tree AllReduce, which is timed as its kernel runs (loops of chunks, :mod:`.nccl_nvls`), and a Ring
AllReduce, whose bandwidth term carries NCCL 2.18.5's chunk rounding and whose latency on one node with the Simple
protocol counts the kernel's slice hand-overs per loop (:mod:`.nccl_ring`);
``model_time_s`` is the unscaled estimate NCCL's choice is based on. Sizes follow nccl-tests (AllGather:
output, ReduceScatter: input), which is what NCCL's ``nBytes`` is. Not modelled: PAT (added in NCCL 2.23,
after the modelled releases), the Tree pattern's 0.85 factor (balanced trees assumed), the CUDA 11.8
two-rank LL128 quirk, the CollNet channel tuning loop, the network's own ``latencyInter`` (taken as 0,
NCCL's default).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Iterable

from distcalc.collective.nccl_constants import (
    COLLNET_THREAD_THRESHOLD, CONSTANTS, LL_MAX_BW, MAX_THREADS, NET_OVERHEAD_US, NVLS_CHANNELS, NVLS_MAX_ARITY,
    NVLS_COLLNET_MAX_THREADS, PCI_BW, PER_CH_MAX_RING_LL128_BW, PER_CH_MAX_TREE_BW, PER_CH_MAX_TREE_LL128_BW,
    RING_PLATEAU_FACTOR, SIMPLE_NET_OVERHEAD_FACTOR, THREAD_THRESHOLD, TREE_CORRECTION, WARP_SIZE, NcclAlgo,
    NcclHw, NcclProto, NcclVersion,
)
from distcalc.collective.nccl_graph import NcclGraph, NcclSystem, communicator_channels, graphs
from distcalc.collective.nccl_nvls import nvls_allreduce_terms_s
from distcalc.collective.nccl_ring import ring_chunk_imbalance, ring_simple_allreduce_latency_us
from distcalc.collective.types import CollectiveKind
from distcalc.errors import AlgorithmError

A, P, K = NcclAlgo, NcclProto, CollectiveKind
US = 1e-6
GB = 1e9
#: The collectives NCCL's tuner prices (Gather/Scatter/AllToAll are point-to-point in NCCL).
TUNED_KINDS = (K.ALL_REDUCE, K.REDUCE_SCATTER, K.ALL_GATHER, K.BROADCAST, K.REDUCE)


@dataclass(frozen=True)
class AlgoProtoCost:
    """One (algorithm, protocol) entry of NCCL's table: latency (µs) and algorithm bandwidth (GB/s)."""

    algorithm: NcclAlgo
    protocol: NcclProto
    latency_us: float
    bandwidth_gbps: float


@dataclass(frozen=True)
class NcclEstimate:
    """NCCL's choice for one operation and its time (seconds) split into latency and bandwidth terms."""

    collective: CollectiveKind
    size_bytes: float
    ranks: int
    version: NcclVersion
    algorithm: NcclAlgo
    protocol: NcclProto
    channels: int
    threads: int
    time_s: float
    latency_term_s: float
    bandwidth_term_s: float
    model_time_s: float
    steps: int
    candidates: tuple[tuple[NcclAlgo, NcclProto, float], ...] = field(default=())

    def as_dict(self) -> dict:
        return {"algorithm": self.algorithm.value, "protocol": self.protocol.value, "channels": self.channels,
                "threads": self.threads, "nccl_version": self.version.value, "time_s": self.time_s,
                "latency_term_s": self.latency_term_s, "bandwidth_term_s": self.bandwidth_term_s,
                "nccl_model_time_s": self.model_time_s, "steps": self.steps,
                "candidates": [{"algorithm": a.value, "protocol": p.value, "nccl_model_time_s": t}
                               for a, p, t in self.candidates]}


def _generation(cc: int) -> str:
    return "hopper" if cc >= 90 else "ampere" if cc >= 80 else "volta"


def _steps(kind: CollectiveKind, ranks: int, nodes: int) -> tuple[int, int]:
    """(nsteps, nInterSteps) of tuning.cc."""
    if kind == K.ALL_REDUCE:
        return 2 * (ranks - 1), (2 * nodes if nodes > 1 else 0)
    if kind in (K.REDUCE_SCATTER, K.ALL_GATHER):
        return ranks - 1, nodes - 1
    return ranks, nodes


def _allowed(kind: CollectiveKind, algo: NcclAlgo, proto: NcclProto, version: NcclVersion) -> bool:
    if algo in (A.NVLS, A.NVLS_TREE) and proto != P.SIMPLE:
        return False
    if kind in (K.BROADCAST, K.REDUCE):
        return algo == A.RING
    if kind in (K.REDUCE_SCATTER, K.ALL_GATHER):
        extra = (A.NVLS, A.COLLNET_DIRECT) if CONSTANTS[version].nvls_for_allgather_reducescatter else ()
        return algo == A.RING or algo in extra
    return True


def _bus_bandwidth(system: NcclSystem, version: NcclVersion, kind: CollectiveKind, graph: NcclGraph,
                   proto: NcclProto) -> float:
    """busBw (GB/s) after tuning.cc's per-algorithm/protocol refinements."""
    c = CONSTANTS[version]
    nodes, algo, cc = system.nodes, graph.algorithm, system.compute_capability
    gen, n_index = _generation(cc), min(nodes, 3) - 1
    collnet = algo in (A.COLLNET_DIRECT, A.COLLNET_CHAIN)
    bw = graph.bw_intra_gbps if nodes <= 2 or collnet else graph.bw_inter_gbps
    if c.nvls_bw_min_intra_inter and algo == A.NVLS:
        bw = min(graph.bw_intra_gbps, graph.bw_inter_gbps)
    if c.nvls_bw_min_intra_inter and algo == A.NVLS_TREE:
        bw = min(graph.bw_intra_gbps, graph.bw_inter_gbps if nodes <= 2 else graph.bw_inter_gbps / 2)
    bus = graph.channels * bw
    ll_max = LL_MAX_BW[gen if nodes == 1 else system.cpu_vendor][n_index]
    if nodes == 1 and gen == "hopper":
        ll_max = c.ll_max_bw_hopper_one_node
    ppn = system.gpus_per_node
    if algo == A.RING and proto == P.LL:
        share = c.ring_ll_share[0 if (nodes > 1 or kind in (K.ALL_REDUCE, K.REDUCE)) else 1]
        bus = min(ll_max, bus * share)
    if algo == A.RING and proto == P.LL128:
        bus = min(bus * (c.ring_ll128_one_gpu_factor if ppn < 2 else 0.92),
                  graph.channels * PER_CH_MAX_RING_LL128_BW[gen][n_index])
    if algo == A.TREE:
        bus = min(bus * 0.92, graph.channels * PER_CH_MAX_TREE_BW[gen][n_index])
        if proto == P.LL:
            bus = min(bus / 3.8, ll_max)
        if proto == P.LL128:
            bus = min(bus * (7 / 9 if nodes == 1 else 120 / 128),
                      graph.channels * PER_CH_MAX_TREE_LL128_BW[gen][n_index])
    if collnet and proto != P.SIMPLE:
        return 0.0
    if algo == A.COLLNET_DIRECT:
        if kind in (K.ALL_GATHER, K.REDUCE_SCATTER):
            return 0.0  # needs the CollNet plugin's allgather/reducescatter, not assumed
        factor = ppn / graph.channels
        bus /= factor - (factor - 1) / 2
        if cc >= 90:
            bus *= 0.85
    return bus


def _ratio(system: NcclSystem, version: NcclVersion, kind: CollectiveKind, algo: NcclAlgo) -> float:
    nsteps, _ = _steps(kind, system.ranks, system.nodes)
    if algo == A.RING:
        return system.ranks / nsteps
    if algo == A.NVLS or (algo == A.NVLS_TREE and CONSTANTS[version].nvls_tree_ratio_5_6):
        return 5 / 6
    if algo == A.NVLS_TREE:
        return 0.70 * system.nodes / (2 * (system.nodes - 1))
    return 0.5


def _latency_us(system: NcclSystem, version: NcclVersion, kind: CollectiveKind, algo: NcclAlgo,
                proto: NcclProto) -> float:
    c = CONSTANTS[version]
    nodes, ranks = system.nodes, system.ranks
    ppn = ranks // nodes
    intra_hw = NcclHw.NVLINK if system.nvswitch else NcclHw.PCI
    lat = c.base_latency_us[(algo, proto)]
    intra = c.hw_latency_us[intra_hw][(algo, proto)]
    inter = c.hw_latency_us[NcclHw.NET][(algo, proto)]
    log_nodes = nodes.bit_length() - 1
    nsteps, n_inter = _steps(kind, ranks, nodes)
    if kind == K.ALL_REDUCE and nodes > 1 and c.ring_allreduce_inter_steps_less_one:
        n_inter = 2 * (nodes - 1)
    if algo == A.RING:
        hop = c.hw_latency_us[intra_hw if nodes == 1 else NcclHw.NET][(algo, proto)]
        if kind in (K.REDUCE, K.BROADCAST):
            return lat + hop  # sameChannels rings (NVSwitch systems)
        overhead = 0.0
        if nodes > 1:
            overhead = NET_OVERHEAD_US[system.cpu_vendor] * (SIMPLE_NET_OVERHEAD_FACTOR if proto == P.SIMPLE else 1)
        return lat + (nsteps - n_inter) * max(intra, overhead) + n_inter * inter
    if algo == A.TREE:
        return lat + 2 * ((ppn - 1) * intra + log_nodes * inter)
    if algo == A.COLLNET_DIRECT:
        return lat + 2 * (min(1, ppn - 1) * intra + (ppn - 1) * c.collnet_arity_latency_us) + inter
    if algo == A.COLLNET_CHAIN:
        return lat + 2 * (ppn - 1) * intra + inter
    if algo == A.NVLS:
        base = intra if c.nvls_latency_from_hw else lat
        return base + (inter if nodes > 1 else 0.0)
    if c.nvls_latency_from_hw:  # NVLS_TREE, 2.20.5
        return lat + intra + 2 * log_nodes * inter
    return lat + 2 * (nodes - 1) * inter  # NVLS_TREE, 2.18.5


def tuning_table(system: NcclSystem, version: NcclVersion, kind: CollectiveKind,
                 algorithms: Iterable[NcclAlgo] | None = None,
                 protocols: Iterable[NcclProto] | None = None) -> list[AlgoProtoCost]:
    """NCCL's (latency, algorithm bandwidth) per enabled (algorithm, protocol); ``algorithms``/``protocols``
    restrict as ``NCCL_ALGO``/``NCCL_PROTO`` do (2.18.5 never disables Ring outside AllReduce; 2.20.5 falls
    back to Ring when nothing is left)."""
    if kind not in TUNED_KINDS:
        raise AlgorithmError(f"NCCL's tuner prices {', '.join(k.value for k in TUNED_KINDS)}; "
                             f"{kind.value} is point-to-point in NCCL")
    if (CONSTANTS[version].pat_not_modelled and kind in (K.REDUCE_SCATTER, K.ALL_GATHER)
            and system.gpus_per_node == 1 and system.nodes > 1):
        raise AlgorithmError(f"NCCL {version.value} runs {kind.value} with one GPU per node with PAT, which is not "
                             "modelled: use 2.18.5 or 2.20.5, or more than one GPU per node")
    algo_set = set(algorithms) if algorithms else set(NcclAlgo)
    proto_set = set(protocols) if protocols else set(NcclProto)
    available = dict(graphs(system, version))
    if system.nodes == 1:
        available.pop(A.NVLS_TREE, None)
    elif not system.collnet:
        available.pop(A.NVLS, None)
    if (CONSTANTS[version].nvls_allgather_reducescatter_one_node and kind in (K.REDUCE_SCATTER, K.ALL_GATHER)
            and (system.nodes > 1 or system.ranks > NVLS_MAX_ARITY)):
        available.pop(A.NVLS, None)
    table, ring_backup = [], []
    for algo, graph in available.items():
        for proto in NcclProto:
            if not _allowed(kind, algo, proto, version):
                continue
            bandwidth = _bus_bandwidth(system, version, kind, graph, proto) * _ratio(system, version, kind, algo)
            if bandwidth <= 0:
                continue
            entry = AlgoProtoCost(algo, proto, _latency_us(system, version, kind, algo, proto), bandwidth)
            if algo == A.RING and proto in proto_set:
                ring_backup.append(entry)
            keep_ring = algo == A.RING and kind != K.ALL_REDUCE and version == NcclVersion.V2_18_5
            if proto in proto_set and (algo in algo_set or keep_ring):
                table.append(entry)
    if not table and CONSTANTS[version].ring_fallback:
        table = ring_backup
    return table


def _tree_correction(algo: NcclAlgo, proto: NcclProto, size_bytes: float) -> float:
    if algo != A.TREE:
        return 1.0
    index = max(int(size_bytes) >> 6, 1).bit_length() - 1
    factors = TREE_CORRECTION[proto]
    return factors[index] if index < len(factors) else 1.0


def model_time_us(system: NcclSystem, kind: CollectiveKind, entry: AlgoProtoCost, size_bytes: float,
                  comm_channels: int) -> tuple[float, float]:
    """ncclTopoGetAlgoTime: (latency µs, bandwidth µs) for one entry (one operation, no aggregation)."""
    bw = entry.bandwidth_gbps * _tree_correction(entry.algorithm, entry.protocol, size_bytes)
    lat = entry.latency_us
    if (entry.algorithm == A.RING and entry.protocol == P.SIMPLE and system.nodes > 1 and kind == K.ALL_REDUCE
            and size_bytes / (comm_channels * system.ranks) >= 64):
        lat *= RING_PLATEAU_FACTOR["sm80+" if system.compute_capability >= 80 else "pre-sm80"]
    return lat, size_bytes / (1000 * bw)


def launched_channels(system: NcclSystem, entry: AlgoProtoCost, size_bytes: float, comm_channels: int,
                      ring_bus_gbps: float, version: NcclVersion = NcclVersion.V2_20_5) -> tuple[int, int]:
    """getAlgoInfo's (channels, threads) for the chosen pair (2.26.2: Tree always runs 640 threads)."""
    algo, proto = entry.algorithm, entry.protocol
    if algo in (A.NVLS, A.NVLS_TREE):
        return NVLS_CHANNELS, NVLS_COLLNET_MAX_THREADS
    if algo in (A.COLLNET_DIRECT, A.COLLNET_CHAIN):
        threads = NVLS_COLLNET_MAX_THREADS
        if algo == A.COLLNET_CHAIN:  # ring/tree-style shrinking with the CollNet threshold
            channels = comm_channels
            while size_bytes < channels * threads * COLLNET_THREAD_THRESHOLD and channels >= 2:
                channels -= 1
            return channels, threads
        return comm_channels, threads
    threads = MAX_THREADS[proto]
    if algo == A.RING and proto == P.SIMPLE and ring_bus_gbps <= PCI_BW:
        threads = 256
    threshold = THREAD_THRESHOLD[proto] * (system.ranks if (algo == A.RING and proto == P.LL) else 1)
    channels = comm_channels
    while size_bytes < channels * threads * threshold:
        if channels >= 2:
            channels -= 1
        elif threads % 128 == 0:
            threads //= 2
        else:
            break
    if proto == P.SIMPLE:
        threads += WARP_SIZE if algo == A.RING else 4 * WARP_SIZE
    if algo == A.TREE and CONSTANTS[version].tree_max_threads:
        return channels, NVLS_COLLNET_MAX_THREADS
    return channels, max(threads, 3 * WARP_SIZE)


def nccl_estimate(system: NcclSystem, kind: CollectiveKind | str, size_bytes: float,
                  version: NcclVersion = NcclVersion.V2_20_5, algorithms: Iterable[NcclAlgo] | None = None,
                  protocols: Iterable[NcclProto] | None = None) -> NcclEstimate:
    """What NCCL picks for ``kind`` of ``size_bytes`` on ``system`` and how long distcalc prices it."""
    kind = CollectiveKind(kind)
    size = float(size_bytes)
    if size < 0:
        raise AlgorithmError(f"size {size_bytes!r} must be ≥ 0 bytes")
    nsteps, _ = _steps(kind, system.ranks, system.nodes)
    if system.ranks == 1 or size == 0:
        return NcclEstimate(kind, size, system.ranks, version, A.RING, P.SIMPLE, 0, 0, 0.0, 0.0, 0.0, 0.0, 0)
    table = tuning_table(system, version, kind, algorithms, protocols)
    if not table:
        raise AlgorithmError(f"no NCCL algorithm/protocol is available for {kind.value} with the given "
                             "restrictions (NCCL: 'no algorithm/protocol available')")
    ring = graphs(system, version)[A.RING]
    comm_channels = communicator_channels(system, ring)
    timed = [(entry, *model_time_us(system, kind, entry, size, comm_channels)) for entry in table]
    best, lat_us, bw_us = min(timed, key=lambda t: t[1] + t[2])
    channels, threads = launched_channels(system, best, size, comm_channels, ring.bus_bw_gbps, version)
    if best.algorithm in (A.RING, A.TREE) and channels < comm_channels:
        bw_us *= comm_channels / channels
    candidates = tuple((e.algorithm, e.protocol, (la + bu) * US) for e, la, bu in timed)
    model = [la + bu for e, la, bu in timed if e is best][0] * US
    lat_s, bw_s = lat_us * US, bw_us * US
    if best.algorithm in (A.NVLS, A.NVLS_TREE) and kind == K.ALL_REDUCE:
        lat_s, bw_s = _nvls_executed(system, version, best, size, channels, bw_s)
    if best.algorithm == A.RING and kind == K.ALL_REDUCE:
        bw_s *= ring_chunk_imbalance(version, best.protocol, size, channels, system.ranks, threads)
        if best.protocol == P.SIMPLE and system.nodes == 1:
            lat_s = _ring_simple_latency_us(system, version, size, channels) * US
    return NcclEstimate(kind, size, system.ranks, version, best.algorithm, best.protocol, channels, threads,
                        lat_s + bw_s, lat_s, bw_s, model, nsteps, candidates)


def _nvls_executed(system: NcclSystem, version: NcclVersion, best: AlgoProtoCost, size: float, channels: int,
                   tuner_bw_s: float) -> tuple[float, float]:
    """(latency, bandwidth) seconds of an NVLS AllReduce as the kernel runs it (:mod:`.nccl_nvls`). Across nodes
    the node-local NVLS stages run as on one node, with NCCL's latency of the chosen algorithm (its network
    hops included), NVLS-Tree with its own chunk and tree hops over each GPU's share of the NICs, and the
    bandwidth term is never below NCCL's own for it (the network part)."""
    node = replace(system, nodes=1, collnet=False)
    heads = graphs(node, version)[A.NVLS].channels  # one NVLS head per GPU of the node
    node_bw = next(e.bandwidth_gbps for e in tuning_table(node, version, K.ALL_REDUCE, [A.NVLS], [P.SIMPLE])
                   if e.algorithm == A.NVLS)
    nvls_bw = best.bandwidth_gbps if best.algorithm == A.NVLS else float("inf")  # 2.20.5 multi-node chunk cap
    nic_per_gpu = system.nic_bandwidth_gbps * system.nics_per_node / system.gpus_per_node if system.nodes > 1 \
        else float("inf")
    lat_s, bw_s = nvls_allreduce_terms_s(version, size, channels, heads, best.latency_us, node_bw,
                                         _reference_nvls_bandwidth_gbps(version), system.nodes, nvls_bw,
                                         best.algorithm, nic_per_gpu)
    return lat_s, (bw_s if system.nodes == 1 else max(bw_s, tuner_bw_s))


def _ring_simple_latency_us(system: NcclSystem, version: NcclVersion, size: float, channels: int) -> float:
    """Latency (µs) of a one-node Ring/Simple AllReduce as its kernel runs: one NCCL step latency per slice
    hand-over of every loop (:mod:`.nccl_ring`), instead of the tuner's one per ring step."""
    c = CONSTANTS[version]
    hw = NcclHw.NVLINK if system.nvswitch else NcclHw.PCI
    return ring_simple_allreduce_latency_us(size, channels, system.ranks, c.base_latency_us[(A.RING, P.SIMPLE)],
                                            c.hw_latency_us[hw][(A.RING, P.SIMPLE)])


#: One 8-GPU H100 SXM node on NVSwitch: where NCCL's maintainer gives the measured NVLS peak (nccl_nvls).
_REFERENCE_NVLS_NODE = NcclSystem(nodes=1, gpus_per_node=8, compute_capability=90, nvlinks_per_gpu=18)


@lru_cache(maxsize=None)
def _reference_nvls_bandwidth_gbps(version: NcclVersion) -> float:
    """NCCL's NVLS AllReduce algorithm bandwidth on the reference node under ``version`` (GB/s)."""
    table = tuning_table(_REFERENCE_NVLS_NODE, version, K.ALL_REDUCE, [A.NVLS], [P.SIMPLE])
    return next(e.bandwidth_gbps for e in table if e.algorithm == A.NVLS)
