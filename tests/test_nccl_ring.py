"""NCCL's Ring/Simple AllReduce kernel as it runs (distcalc.collective.nccl_ring): loops of 2 MiB chunks, 2N-1
primitive calls per loop, two slices per call, one NCCL step latency per slice hand-over."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.cluster import load_cluster
from distcalc.collective.nccl_cluster import nccl_system
from distcalc.collective.nccl_constants import NcclAlgo, NcclProto, NcclVersion
from distcalc.collective.nccl_ring import (
    LL128_CHUNK_BYTES, LL_CHUNK_BYTES, MIN_SLICE_BYTES, RING_SIMPLE_CHUNK_BYTES, ring_chunk_imbalance,
    ring_simple_allreduce_handovers, ring_simple_allreduce_latency_us, slices_per_call,
)
from distcalc.collective.nccl_tuner import nccl_estimate

MIB = 1 << 20


def test_constants_from_nccl_source():
    # DEFAULT_BUFFSIZE 4 MiB / NCCL_STEPS 8 = 512 KiB step; ALLREDUCE_CHUNKSTEPS 4 -> 2 MiB; slice >= 1 MiB / 32
    assert RING_SIMPLE_CHUNK_BYTES == 2 * MIB
    assert MIN_SLICE_BYTES == 32 << 10


def test_slices_per_call():
    assert slices_per_call(0) == 0
    assert slices_per_call(1) == 1                 # one slice of at least 32 KiB
    assert slices_per_call(32 << 10) == 1
    assert slices_per_call(48 << 10) == 2          # two slices: 32 KiB + 16 KiB
    assert slices_per_call(2 * MIB) == 2


def test_dgx_a100_handover_counts():
    # 24 channels x 8 ranks x 2 MiB = 384 MiB per loop; 15 calls x 2 slices = 30 hand-overs per loop
    assert ring_simple_allreduce_handovers(32 * MIB, 24, 8) == 30
    assert ring_simple_allreduce_handovers(384 * MIB, 24, 8) == 30
    assert ring_simple_allreduce_handovers(384 * MIB + 1, 24, 8) == 30 + 15  # last loop: 1-byte calls, 1 slice
    assert ring_simple_allreduce_handovers(8192 * MIB, 24, 8) == 22 * 30
    assert ring_simple_allreduce_latency_us(32 * MIB, 24, 8, 8.4, 3.4) == pytest.approx(8.4 + 30 * 3.4)


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 1 << 36), channels=st.integers(1, 32), ranks=st.integers(2, 64))
def test_handovers_at_least_one_per_call_and_grow_with_size(size, channels, ranks):
    h = ring_simple_allreduce_handovers(size, channels, ranks)
    assert h >= 2 * ranks - 1                        # every call waits and posts at least once
    assert ring_simple_allreduce_handovers(2 * size, channels, ranks) >= h
    assert h % (2 * ranks - 1) == 0


def test_estimate_uses_kernel_handovers_on_one_a100_node_only():
    system = nccl_system(load_cluster("dgx-a100"), 8)
    est = nccl_estimate(system, "all-reduce", 64 * MIB, NcclVersion.V2_18_5)
    assert (est.algorithm, est.protocol, est.channels) == (NcclAlgo.RING, NcclProto.SIMPLE, 24)
    assert est.latency_term_s == pytest.approx((8.4 + 30 * 3.4) * 1e-6)
    # NCCL's own estimate (and so its choice) is unchanged: baseLat + 14 x hwLat; the kernel's bandwidth term is
    # NCCL's times the 2.18.5 chunk rounding of the busiest channel (64 MiB / 192 rounded up to 4 KiB: 1.0078)
    imbalance = ring_chunk_imbalance(NcclVersion.V2_18_5, NcclProto.SIMPLE, 64 * MIB, 24, 8, est.threads)
    assert imbalance == pytest.approx(43 * 4096 * 192 / (32 * MIB))
    assert est.model_time_s == pytest.approx((8.4 + 14 * 3.4) * 1e-6 + est.bandwidth_term_s / imbalance)
    assert est.time_s > est.model_time_s
    # across nodes the ring keeps NCCL's tuner time
    two_nodes = nccl_system(load_cluster("dgx-a100"), 16)
    ring = nccl_estimate(two_nodes, "all-reduce", 1 << 30, NcclVersion.V2_18_5, algorithms=[NcclAlgo.RING],
                         protocols=[NcclProto.SIMPLE])
    assert ring.time_s == pytest.approx(ring.model_time_s, rel=1e-12)


def test_chunk_constants_from_nccl_source():
    # LL: 8 lines x 512 threads x 8 steps x 16 B buffer, half data, per step; LL128: 120 x 640 x 8 x 8 B, 15/16 data
    assert LL_CHUNK_BYTES == 32768
    assert LL128_CHUNK_BYTES == 576000


@pytest.mark.parametrize("size_mib, expected", [
    # 24 channels x 8 ranks x 19,200 B (LL128 grain, 640 threads) = 3,686,400 B per grain row
    (2, 1.2556), (4, 1.2556), (8, 1.2242), (16, 1.0986),
])
def test_ll128_chunk_rounding_on_dgx_a100(size_mib, expected):
    value = ring_chunk_imbalance(NcclVersion.V2_18_5, NcclProto.LL128, size_mib * MIB, 24, 8, 640)
    assert value == pytest.approx(expected, abs=1e-4)
    # NCCL 2.20.5 splits the work evenly per channel: no rounding penalty
    assert ring_chunk_imbalance(NcclVersion.V2_20_5, NcclProto.LL128, size_mib * MIB, 24, 8, 640) == 1.0


def test_exact_multiples_are_balanced():
    row = 24 * 8 * 19200
    assert ring_chunk_imbalance(NcclVersion.V2_18_5, NcclProto.LL128, 3 * row, 24, 8, 640) == pytest.approx(1.0)
    assert ring_chunk_imbalance(NcclVersion.V2_18_5, NcclProto.SIMPLE, 2 * 24 * 8 * 2 * MIB, 24, 8, 544) == 1.0


@settings(max_examples=60, deadline=None)
@given(size=st.integers(1, 1 << 30), channels=st.integers(1, 24), ranks=st.integers(2, 16),
       proto=st.sampled_from(list(NcclProto)), threads=st.sampled_from([128, 256, 512, 544, 640]))
def test_imbalance_is_at_least_one_and_finite(size, channels, ranks, proto, threads):
    value = ring_chunk_imbalance(NcclVersion.V2_18_5, proto, size, channels, ranks, threads)
    assert 1.0 <= value < float("inf")
    # never more than the whole loop's chunks on one rank of one channel
    assert value <= channels * ranks
