"""How NCCL's NVLS all-reduce kernel runs on an NVSwitch node: loops of chunks through a two-stage pipeline.

NCCL's tuner (``ncclTopoGetAlgoTime``) prices NVLS as ``latency + nBytes / bandwidth``; the kernel does not run
that way. Re-expressed from NCCL's published source (github.com/NVIDIA/nccl, tags v2.18.5-1 and v2.20.5-1):

* ``src/enqueue.cc`` (``computeColl``): the chunk is ``min(stepSize·chunkSteps, 128 KiB)`` (2.20.5: 32 KiB
  across nodes when NCCL's NVLS bandwidth is < 150 GB/s), then shrinks to 64 KiB when
  ``nBytes < 64·concurrentOps·chunk``, to 32 KiB when ``< 8·concurrentOps·chunk`` and to 16 KiB when
  ``< 2·concurrentOps·chunk``, with ``concurrentOps = nChannels × nvls.nHeads`` (16 channels × 8 heads = 128 on
  an 8-GPU node).
* ``src/collectives/device/all_reduce.h`` (2.18.5, ``RunWorkElement<…, NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE>``):
  every channel walks the buffer in loops of ``loopSize = nChannels · nHeads · chunk`` bytes; scatter, reduce
  (``multimem`` load-reduce / store through the switch) and gather warps work concurrently on consecutive
  chunks, each chunk handed over through the Simple protocol's step flags.

So the time is ``latency + (loops + 1) · step + (c + min(c, nHeads · chunk)) · nChannels / bandwidth`` with
``c`` the bytes of the busiest channel (:func:`channel_bytes`, per release) and ``bandwidth / nChannels`` one
channel's share: ``loops = ⌈nBytes / loopSize⌉`` hand-overs of one Simple step each, and one loop of the
channel's data that is not overlapped (the first loop's scatter and the last loop's gather run alone: the
two-stage pipeline's fill and drain, an approximation of the three concurrent warp groups). Constants, none
fitted to a measurement series:

* ``latency``: NCCL's own NVLS latency (tuning.cc; 23 µs in both releases);
* ``step``: NCCL's per-step latency of the Simple protocol on NVLink (tuning.cc ``hwLat[NVLINK][RING][SIMPLE]``
  = 3.4 µs), the cost of one flag hand-over;
* ``bandwidth``: the peak NVLS all-reduce algorithm bandwidth NCCL's maintainer gives for one 8-GPU H100 node,
  "peak busBw of ~480GB/s (algbw ~275GB/s)" (S. Jeaugey, NVIDIA/nccl-tests issue #212, 2024-05-06), which is
  1.031× NCCL's tuner bandwidth for that node (8 × 40 GB/s × 5/6 = 266.7 GB/s); other NVLS nodes take their
  tuner bandwidth × the same 275 / 266.7. A measured peak already contains one step per loop of full-size
  (128 KiB) chunks, so the rate data moves at is ``1 / (1/peak − step / (nChannels · nHeads · 128 KiB))``
  (291 GB/s on 8 H100s): large messages come out at the peak, smaller chunks pay their extra steps.

NVLS-Tree (across nodes) runs the same node-local stages with its own chunk (``computeColl``: one Simple step,
512 KiB, capped at 64 KiB from 4 nodes in 2.20.5, shrinking to 256/128/64/32 KiB while ``nBytes < 32/16/4/1 ×
concurrentOps × chunk``), and between the node-local reduce and multicast each chunk crosses NCCL's inter-node tree
up to the root and back down (``src/device/all_reduce.h`` 2.20.5, ``NCCL_ALGO_NVLS_TREE``: the reduce warps send to
``treeUp``, the broadcast warps receive from it; ``src/graph/trees.cc`` ``ncclGetBtree``: depth ⌈log2 nodes⌉).
Each hop is a store-and-forward stage of one chunk per head (the Simple protocol posts a step once it is written),
so the pipeline fills and drains through ``2 · depth`` more stages, each carrying every channel's chunk over one
GPU's share of the node's NICs: ``+ 2 · depth · chunk · nChannels / (NIC bandwidth per GPU)``.

Scope: AllReduce. Across nodes (:func:`distcalc.collective.nccl_tuner.nccl_estimate`) the node-local
stages are timed this way with NCCL's latency of the algorithm (network hops included) and the bandwidth
term is never below NCCL's own. NVLS AllGather / ReduceScatter keep NCCL's tuner time.
"""

from __future__ import annotations

import math

from distcalc.collective.nccl_constants import (
    CONSTANTS, NVLS_CHUNK_SHRINK, NVLS_MAX_CHUNK_BYTES, NVLS_MULTINODE_SLOW_CHUNK_BYTES,
    NVLS_MULTINODE_SLOW_GBPS, NVLS_PEAK_ALGBW_8XH100_GBPS, NVLS_TREE_CHUNK_SHRINK, NVLS_TREE_MANY_NODES,
    NVLS_TREE_MANY_NODES_CHUNK_BYTES, SIMPLE_CHANNEL_ALIGNMENT_BYTES, NcclAlgo, NcclHw, NcclProto, NcclVersion,
)

#: enqueue.h NCCL_BYTES_ALIGNMENT (2.20.5): ``maxBytesPerChannel`` is rounded up to 16 bytes.
BYTES_ALIGNMENT = 16

US = 1e-6
GB = 1e9


def nvls_chunk_bytes(version: NcclVersion, size_bytes: float, channels: int, heads: int, nodes: int = 1,
                     nvls_bandwidth_gbps: float = float("inf")) -> int:
    """computeColl's NVLS chunk size (bytes) for an operation of ``size_bytes`` (``nvls_bandwidth_gbps``:
    NCCL's ``comm->bandwidths[AllReduce][NVLS][Simple]``, read across nodes only)."""
    chunk = NVLS_MAX_CHUNK_BYTES
    if version != NcclVersion.V2_18_5 and nodes > 1 and nvls_bandwidth_gbps < NVLS_MULTINODE_SLOW_GBPS:
        chunk = NVLS_MULTINODE_SLOW_CHUNK_BYTES
    concurrent_ops = channels * heads
    for multiple, smaller in NVLS_CHUNK_SHRINK:
        if size_bytes < multiple * concurrent_ops * chunk and chunk > smaller:
            chunk = smaller
    return chunk


def nvls_tree_chunk_bytes(version: NcclVersion, size_bytes: float, channels: int, heads: int, nodes: int) -> int:
    """computeColl's NVLS-Tree chunk size (bytes) for an operation of ``size_bytes`` on ``nodes`` nodes: from one
    Simple step (``NVLS_TREE_START_CHUNK_BYTES``; 2.26.2: ``nvlsChunkSize``, 128 KiB), capped and shrunk."""
    chunk = CONSTANTS[version].nvls_tree_start_chunk_bytes
    if version != NcclVersion.V2_18_5 and nodes >= NVLS_TREE_MANY_NODES:
        chunk = min(chunk, NVLS_TREE_MANY_NODES_CHUNK_BYTES)
    concurrent_ops = channels * heads
    for multiple, smaller in NVLS_TREE_CHUNK_SHRINK:
        if size_bytes < multiple * concurrent_ops * chunk and chunk > smaller:
            chunk = smaller
    return chunk


def tree_depth(nodes: int) -> int:
    """Depth of NCCL's binary trees over ``nodes`` nodes (trees.cc ``ncclGetBtree``): ⌈log2 nodes⌉."""
    return max(0, nodes - 1).bit_length()


def nvls_allreduce_terms_s(version: NcclVersion, size_bytes: float, channels: int, heads: int,
                           latency_us: float, tuner_bandwidth_gbps: float,
                           reference_tuner_bandwidth_gbps: float, nodes: int = 1,
                           nvls_bandwidth_gbps: float = float("inf"), algorithm: NcclAlgo = NcclAlgo.NVLS,
                           nic_gbps_per_gpu: float = float("inf")) -> tuple[float, float]:
    """(latency term, bandwidth term) in seconds of one NVLS or NVLS-Tree all-reduce (module docstring).

    ``tuner_bandwidth_gbps``: NCCL's NVLS algorithm bandwidth for one node; ``reference_…``: the same for one
    8-GPU H100 node under ``version`` (the maintainer's 275 GB/s is measured there); ``nodes`` and
    ``nvls_bandwidth_gbps`` (NCCL's NVLS bandwidth of the whole communicator) set the chunk across nodes;
    ``algorithm`` NVLS-Tree takes its own chunk and the tree hops over ``nic_gbps_per_gpu`` (GB/s)."""
    if size_bytes <= 0:
        return 0.0, 0.0
    if algorithm == NcclAlgo.NVLS_TREE:
        chunk = nvls_tree_chunk_bytes(version, size_bytes, channels, heads, nodes)
    else:
        chunk = nvls_chunk_bytes(version, size_bytes, channels, heads, nodes, nvls_bandwidth_gbps)
    channel_loop_bytes = heads * chunk
    loops = math.ceil(size_bytes / (channels * channel_loop_bytes))
    busiest = channel_bytes(version, size_bytes, channels, channel_loop_bytes)
    step_us = CONSTANTS[version].hw_latency_us[NcclHw.NVLINK][(NcclAlgo.RING, NcclProto.SIMPLE)]
    peak = tuner_bandwidth_gbps * NVLS_PEAK_ALGBW_8XH100_GBPS / reference_tuner_bandwidth_gbps * GB
    # The measured peak includes one step per full-size loop: the wire rate is what is left without it.
    full_loop_bytes = channels * heads * NVLS_MAX_CHUNK_BYTES
    bandwidth = 1.0 / (1.0 / peak - step_us * US / full_loop_bytes)
    latency_s = (latency_us + (loops + 1) * step_us) * US
    bandwidth_s = (busiest + min(busiest, channel_loop_bytes)) * channels / bandwidth
    if algorithm == NcclAlgo.NVLS_TREE:
        head_chunk = min(chunk, busiest / heads)
        bandwidth_s += 2 * tree_depth(nodes) * head_chunk * channels / (nic_gbps_per_gpu * GB)
    return latency_s, bandwidth_s


def channel_bytes(version: NcclVersion, size_bytes: float, channels: int, channel_loop_bytes: int) -> float:
    """Bytes the busiest channel carries. 2.20.5 splits the operation evenly over the channels, each share
    rounded up to NCCL_SIMPLE_ALIGNMENT (4 KiB) and capped by what is left (enqueue.cc ``addCBDCollToPlan``:
    ``maxBytesPerChannel = ⌈nBytes / nChannels⌉₁₆``, ``workCount`` aligned to ``alignCount``), so channel 0
    carries ``min(nBytes, ⌈nBytes / nChannels⌉ rounded up to 4 KiB)``; 2.18.5 hands out ``nHeads × chunk`` per
    channel per loop from offset ``bid · nHeads · chunk`` (all_reduce.h), so a message below one loop runs on the
    first channels only and channel 0 carries up to a full ``nHeads × chunk`` in every loop. 2.26.2
    (``scheduleCollTasksToPlan``) fills channels in cells of ``channel_cell_bytes`` (8 KiB of an AllReduce), each
    channel taking ``⌈max(16 KiB, 2·nBytes / nChannels) / 16 KiB⌉`` cells of traffic, so channel 0 carries
    ``min(nBytes, 8 KiB × max(1, ⌈nBytes / (8 KiB · nChannels)⌉))``."""
    cell = CONSTANTS[version].channel_cell_bytes
    if cell:
        return min(size_bytes, cell * max(1, math.ceil(size_bytes / (cell * channels))))
    if CONSTANTS[version].nvls_even_channel_split:
        share = math.ceil(size_bytes / channels / BYTES_ALIGNMENT) * BYTES_ALIGNMENT
        return min(size_bytes, math.ceil(share / SIMPLE_CHANNEL_ALIGNMENT_BYTES) * SIMPLE_CHANNEL_ALIGNMENT_BYTES)
    loop_bytes = channels * channel_loop_bytes
    full_loops, rest = divmod(size_bytes, loop_bytes)
    return full_loops * channel_loop_bytes + min(rest, channel_loop_bytes)


__all__ = ["channel_bytes", "nvls_allreduce_terms_s", "nvls_chunk_bytes", "nvls_tree_chunk_bytes", "tree_depth"]
