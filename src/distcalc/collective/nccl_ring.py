"""How NCCL's Ring all-reduce kernel runs with the Simple protocol: loops of chunks, each step in slices.

NCCL's tuner (``ncclTopoGetAlgoTime``) prices Ring/Simple as ``baseLat + nsteps · hwLat + nBytes / bandwidth``:
one hand-over of ``hwLat`` per ring step, ``nsteps = 2(N−1)`` per operation, whatever its size (tuning.cc,
tag v2.18.5-1 lines 202-225; its own comment on the Broadcast/Reduce branch, "waiting for proper chunk
modeling", says the chunks are not modelled). The kernel does not run that way. Re-expressed from NCCL's
published source (github.com/NVIDIA/nccl, tags v2.18.5-1 and v2.20.5-1):

* ``src/collectives/device/all_reduce.h`` (2.18.5; ``src/device/all_reduce.h`` in 2.20.5), ``runRing``: every
  channel walks its data in loops of ``nRanks × chunk``; one loop is ``send``, ``N−2 × recvReduceSend``,
  ``directRecvReduceCopySend``, ``N−2 × directRecvCopySend`` and ``directRecv``: ``2N − 1`` primitive calls,
  each on one chunk ``min(chunk, ⌈rest / (nChannels · nRanks)⌉)``;
* the chunk is ``ALLREDUCE_CHUNKSTEPS = NCCL_STEPS/2`` steps of ``buffSize / NCCL_STEPS`` bytes
  (``src/include/collectives.h``; ``src/init.cc`` ``DEFAULT_BUFFSIZE`` 4 MiB, ``NCCL_STEPS`` 8): 2 MiB, so one
  loop of all channels covers ``nChannels × nRanks × 2 MiB`` (384 MiB on 24 channels × 8 GPUs);
* ``src/collectives/device/prims_simple.h`` ``genericOp``: each call splits its chunk into
  ``SlicePerChunk = CHUNKSTEPS / SLICESTEPS = 2`` slices (``ALLREDUCE_SLICESTEPS = NCCL_STEPS/4``), a slice
  never smaller than ``stepSize · StepPerSlice / 32`` (32 KiB), and for every slice the channel's one thread
  block waits for its peers' step flags (``waitPeer``), copies/reduces, synchronises and posts its own flags
  (``postPeer``), one after the other: the hand-over is not overlapped with the slice's copy.

So one operation runs ``Σ_loops (2N − 1) · slices`` hand-overs where NCCL's tuner counts ``2(N − 1)``, and
distcalc times Ring/Simple AllReduce on one node as

    latency = baseLat + hand-overs · hwLat,   bandwidth term = NCCL's (nBytes / algorithm bandwidth)

with NCCL's own constants (``baseLat[Ring][Simple]`` 8.4 µs, ``hwLat[NVLink][Ring][Simple]`` 3.4 µs or the PCI
value; the same per-hand-over cost :mod:`.nccl_nvls` uses); none is fitted to a measurement. On an 8× A100 node
(24 channels) one loop costs 30 hand-overs (102 µs) where the tuner counts 14 (48 µs), and an 8 GiB operation
runs 22 loops.

**Chunk rounding (NCCL 2.18.5).** ``runRing`` also sets the chunk of a loop that does not fill ``loopSize``:
``realChunkSize = min(chunk, ⌈rest / (nChannels · nRanks · grain)⌉ · grain)`` with, per protocol, the grain
``minChunkSize = nThreads · 8 B`` (LL), ``nThreads · 60 B / 2`` (LL128: ``calcBytePerGrain`` = 8 × 15 × 8 / 16;
NCCL's comment: "We should not need the final /2 but it makes performance much, much smoother") and
``(nThreads − 32) · 8 B`` (Simple); chunk ``c`` of channel ``b`` starts at ``(c · nChannels + b) · realChunkSize``
(LL, LL128) or ``(b · nRanks + c) · realChunkSize`` (Simple) and holds ``min(realChunkSize, rest − start)``. A
message that is not a multiple of ``nChannels · nRanks · grain`` (19,200 B on LL128 with 640 threads) leaves the
first channels with full chunks and the last ones short, and the operation lasts as long as its busiest channel.
distcalc scales NCCL's bandwidth term by ``(bytes the busiest rank of the busiest channel sends) / (its even
share, 2(N − 1) · nBytes / (nChannels · N))`` (rank ``r`` sends chunks ``r−1, r−2, …`` in its ``2(N − 1)`` sending
calls): 1.76 for an 8-GPU LL128 all-reduce of 2 and 4 MiB on 24 channels, 1.32 at 8 MiB, 1.10 at 16 MiB. NCCL
2.20.5 splits the work evenly per channel (``enqueue.cc`` ``computeCollLastChunkInfo``), so there the factor is 1.

Scope: AllReduce on one node (hand-overs); the chunk rounding applies to every 2.18.5 Ring AllReduce. Across nodes the ring's network steps are proxied by the host (net transport) and
keep NCCL's tuner time; AllGather/ReduceScatter/Broadcast/Reduce keep it too. Not modelled: what the size of a
slice does to the per-channel copy rate (the tuner's bandwidth is kept), the pipeline's data dependencies along
the ring beyond the hand-overs.
"""

from __future__ import annotations

import math

from distcalc.collective.nccl_constants import NcclProto, NcclVersion

#: src/init.cc DEFAULT_BUFFSIZE (4 MiB Simple buffer per connection) / NCCL_STEPS (8): bytes of one Simple step.
SIMPLE_STEP_BYTES = (4 << 20) // 8
#: src/include/collectives.h ALLREDUCE_CHUNKSTEPS = NCCL_STEPS/2, ALLREDUCE_SLICESTEPS = NCCL_STEPS/4.
ALLREDUCE_CHUNK_STEPS = 4
ALLREDUCE_SLICE_STEPS = 2
RING_SIMPLE_CHUNK_BYTES = SIMPLE_STEP_BYTES * ALLREDUCE_CHUNK_STEPS
SLICES_PER_CHUNK = ALLREDUCE_CHUNK_STEPS // ALLREDUCE_SLICE_STEPS
#: prims_simple.h genericOp: sliceSize = max(⌈nelem / SlicePerChunk⌉, stepSize · StepPerSlice / 32).
MIN_SLICE_BYTES = SIMPLE_STEP_BYTES * ALLREDUCE_SLICE_STEPS // 32


def ring_allreduce_calls_per_loop(ranks: int) -> int:
    """Primitive calls of one ``runRing`` loop: send, N−2 recvReduceSend, recvReduceCopySend, N−2 recvCopySend,
    recv (2N − 1)."""
    return 2 * ranks - 1


def slices_per_call(call_bytes: float) -> int:
    """How many slices ``genericOp`` runs for a call on ``call_bytes`` (module docstring)."""
    if call_bytes <= 0:
        return 0
    slice_bytes = max(math.ceil(call_bytes / SLICES_PER_CHUNK), MIN_SLICE_BYTES)
    return math.ceil(call_bytes / slice_bytes)


def ring_simple_allreduce_handovers(size_bytes: float, channels: int, ranks: int) -> int:
    """Hand-overs (wait + post of step flags) of the busiest channel for a Ring/Simple AllReduce of
    ``size_bytes`` on ``channels`` channels and ``ranks`` ranks: full loops of 2 MiB chunks, then one loop of
    ``⌈rest / (channels · ranks)⌉`` chunks (2.18.5 ``realChunkSize``)."""
    if size_bytes <= 0 or channels < 1 or ranks < 2:
        return 0
    loop_bytes = channels * ranks * RING_SIMPLE_CHUNK_BYTES
    full_loops, rest = divmod(size_bytes, loop_bytes)
    calls = ring_allreduce_calls_per_loop(ranks)
    handovers = int(full_loops) * calls * slices_per_call(RING_SIMPLE_CHUNK_BYTES)
    if rest > 0:
        handovers += calls * slices_per_call(math.ceil(rest / (channels * ranks)))
    return handovers


#: Bytes of one step per protocol (init.cc buffer sizes / NCCL_STEPS, LL half data, LL128 15/16 data):
#: LL 8 lines × 512 threads × 8 steps × 16 B; LL128 120 × 640 × 8 × 8 B; Simple 4 MiB.
LL_CHUNK_BYTES = 8 * 512 * 8 * 16 // 8 // 2
LL128_CHUNK_BYTES = 120 * 640 * 8 * 8 // 8 * 15 // 16
#: Releases whose runRing rounds a partial loop's chunk to the protocol's grain (2.20.5 splits evenly).
CHUNK_ROUNDING_RELEASES = (NcclVersion.V2_18_5,)


def _chunk_and_grain_bytes(protocol: NcclProto, threads: int) -> tuple[int, int]:
    if protocol == NcclProto.LL:
        return LL_CHUNK_BYTES, threads * 8
    if protocol == NcclProto.LL128:
        return LL128_CHUNK_BYTES, threads * 60 // 2
    return RING_SIMPLE_CHUNK_BYTES, max(threads - 32, 32) * 8


def _busiest_rank_bytes(rest: float, chunk: int, channels: int, ranks: int, protocol: NcclProto) -> float:
    """Bytes the busiest rank of the busiest channel sends in a loop whose chunk is ``chunk``."""
    def held(c: int, b: int) -> float:
        start = (c * channels + b) * chunk if protocol != NcclProto.SIMPLE else (b * ranks + c) * chunk
        return min(chunk, max(rest - start, 0.0))
    busiest = 0.0
    for b in range(channels):
        sizes = [held(c, b) for c in range(ranks)]
        total = sum(sizes)
        # rank r's sending calls work on chunks r−1, …, r−(N−1) (every chunk but r), then r, …, r−(N−2) (every
        # chunk but r+1): 2·total − sizes[r] − sizes[r+1]
        busiest = max(busiest, max(2 * total - sizes[r] - sizes[(r + 1) % ranks] for r in range(ranks)))
    return busiest


def ring_chunk_imbalance(version: NcclVersion, protocol: NcclProto, size_bytes: float, channels: int, ranks: int,
                         threads: int) -> float:
    """Bytes the busiest rank of the busiest channel sends over its even share (≥ 1; 1 outside 2.18.5)."""
    if version not in CHUNK_ROUNDING_RELEASES or size_bytes <= 0 or channels < 1 or ranks < 2:
        return 1.0
    chunk, grain = _chunk_and_grain_bytes(protocol, threads)
    loop_bytes = channels * ranks * chunk
    full_loops, rest = divmod(size_bytes, loop_bytes)
    sent = full_loops * 2 * (ranks - 1) * chunk
    if rest > 0:
        last_chunk = min(chunk, math.ceil(rest / (channels * ranks * grain)) * grain)
        sent += _busiest_rank_bytes(rest, last_chunk, channels, ranks, protocol)
    even = 2 * (ranks - 1) * size_bytes / (channels * ranks)
    return max(1.0, sent / even)


def ring_simple_allreduce_latency_us(size_bytes: float, channels: int, ranks: int, base_latency_us: float,
                                     step_latency_us: float) -> float:
    """Latency term (µs) of a one-node Ring/Simple AllReduce as the kernel runs it: NCCL's ``baseLat`` plus one
    ``hwLat`` per hand-over (module docstring)."""
    return base_latency_us + ring_simple_allreduce_handovers(size_bytes, channels, ranks) * step_latency_us


__all__ = ["CHUNK_ROUNDING_RELEASES", "MIN_SLICE_BYTES", "ring_chunk_imbalance", "RING_SIMPLE_CHUNK_BYTES", "SLICES_PER_CHUNK", "ring_allreduce_calls_per_loop",
           "ring_simple_allreduce_handovers", "ring_simple_allreduce_latency_us", "slices_per_call"]
