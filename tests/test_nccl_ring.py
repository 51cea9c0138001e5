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
    MIN_SLICE_BYTES, RING_SIMPLE_CHUNK_BYTES, ring_simple_allreduce_handovers, ring_simple_allreduce_latency_us,
    slices_per_call,
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
    # NCCL's own estimate (and so its choice) is unchanged: baseLat + 14 x hwLat
    assert est.model_time_s == pytest.approx((8.4 + 14 * 3.4) * 1e-6 + est.bandwidth_term_s)
    assert est.time_s > est.model_time_s
    # across nodes the ring keeps NCCL's tuner time
    two_nodes = nccl_system(load_cluster("dgx-a100"), 16)
    ring = nccl_estimate(two_nodes, "all-reduce", 1 << 30, NcclVersion.V2_18_5, algorithms=[NcclAlgo.RING],
                         protocols=[NcclProto.SIMPLE])
    assert ring.time_s == pytest.approx(ring.model_time_s, rel=1e-12)
