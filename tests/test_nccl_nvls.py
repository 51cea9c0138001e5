"""NVLS AllReduce as NCCL's kernel runs it (chunk rules of enqueue.cc, per-channel work, loop pipeline)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from distcalc.cluster import load_cluster
from distcalc.collective.nccl_cluster import nccl_system
from distcalc.collective.nccl_constants import NcclAlgo, NcclVersion
from distcalc.collective.nccl_graph import NcclSystem
from distcalc.collective.nccl_nvls import (
    channel_bytes, nvls_allreduce_terms_s, nvls_chunk_bytes, nvls_tree_chunk_bytes, tree_depth,
)
from distcalc.collective.nccl_tuner import nccl_estimate

V18, V20 = NcclVersion.V2_18_5, NcclVersion.V2_20_5
H100 = nccl_system(load_cluster("dgx-h100"), 8)
MIB = 1 << 20


@pytest.mark.parametrize("size, chunk", [
    (1 << 10, 16384), (8 * MIB - 1, 16384), (8 * MIB, 32768), (64 * MIB - 1, 32768), (64 * MIB, 65536),
    ((1 << 30) - 1, 65536), (1 << 30, 131072), (8 << 30, 131072)])
def test_chunk_follows_enqueue_thresholds(size, chunk):
    # 16 channels x 8 heads = 128 concurrent ops: 2 x 128 x 32 KiB = 8 MiB, 8 x 128 x 64 KiB = 64 MiB,
    # 64 x 128 x 128 KiB = 1 GiB
    assert nvls_chunk_bytes(V18, size, 16, 8) == chunk
    assert nvls_chunk_bytes(V20, size, 16, 8) == chunk


def test_multi_node_slow_nvls_caps_chunk_in_2_20_only():
    assert nvls_chunk_bytes(V20, 8 << 30, 16, 8, nodes=2, nvls_bandwidth_gbps=100.0) == 32768
    assert nvls_chunk_bytes(V18, 8 << 30, 16, 8, nodes=2, nvls_bandwidth_gbps=100.0) == 131072


def test_multi_node_nvls_with_sharp_is_timed_with_the_capped_chunk():
    # 2 nodes of 8 H100 with SHARP: NCCL runs NVLS across nodes. With 8 x 12.5 GB/s NICs NCCL's NVLS bandwidth is
    # min(40, 12) x 8 x 5/6 = 80 GB/s < 150, so 2.20.5 caps the chunk at 32 KiB (4x the loops of 128 KiB chunks,
    # 2.18.5 keeps 128 KiB); with 8 x 50 GB/s NICs it is 266.7 GB/s and the chunk stays 128 KiB.
    def system(nic_gbps):
        return NcclSystem(nodes=2, gpus_per_node=8, compute_capability=90, nvlinks_per_gpu=18, nics_per_node=8,
                          nic_bandwidth_gbps=nic_gbps, collnet=True)
    slow = {v: nccl_estimate(system(12.5), "all-reduce", 1 << 30, v, algorithms=[NcclAlgo.NVLS]) for v in (V18, V20)}
    fast = nccl_estimate(system(50.0), "all-reduce", 1 << 30, V20, algorithms=[NcclAlgo.NVLS])
    assert all(e.algorithm == NcclAlgo.NVLS for e in (*slow.values(), fast))
    step = 3.4e-6
    # latency term = NCCL's NVLS latency + (loops + 1) steps: 1 GiB / (16 x 8 x chunk) loops
    assert fast.latency_term_s == pytest.approx(41e-6 + (64 + 1) * step)
    assert slow[V20].latency_term_s == pytest.approx(41e-6 + (256 + 1) * step)
    assert slow[V18].latency_term_s == pytest.approx((23 + 18) * 1e-6 + (64 + 1) * step)  # baseLat + NET hop


def test_channel_bytes_per_release():
    loop = 8 * 16384  # one channel's loop: 8 heads x 16 KiB
    assert channel_bytes(V20, 64 << 10, 16, loop) == pytest.approx((64 << 10) / 16)  # even split
    assert channel_bytes(V18, 64 << 10, 16, loop) == 64 << 10  # all on channel 0
    assert channel_bytes(V18, 1 * MIB, 16, loop) == loop  # 8 channels busy, one loop each
    assert channel_bytes(V18, 5 * MIB, 16, loop) == 2 * loop + loop  # 2 full loops + a full share of the rest
    assert channel_bytes(V18, 64 * MIB, 16, loop) == pytest.approx(64 * MIB / 16)


@pytest.mark.parametrize("size, busiest", [
    (1 << 10, 1 << 10), (4 << 10, 4 << 10), (16 << 10, 4 << 10), (64 << 10, 4 << 10), (100 << 10, 8 << 10),
    (1 * MIB, 64 << 10), (8 * MIB, 512 << 10)])
def test_2_20_channel_share_is_rounded_up_to_4_kib(size, busiest):
    # enqueue.cc addCBDCollToPlan: ⌈nBytes / 16 channels⌉ rounded up to NCCL_SIMPLE_ALIGNMENT = 32 x 8 x 16 B,
    # capped by the bytes left: below 64 KiB channel 0 carries 4 KiB (or the whole message), not nBytes / 16
    assert channel_bytes(V20, size, 16, 8 * 16384) == busiest


def test_large_messages_reach_the_maintainers_peak():
    lat, bw = nvls_allreduce_terms_s(V20, 8 << 30, 16, 8, 23.0, 266.67, 266.67)
    assert (8 << 30) / (lat + bw) / 1e9 == pytest.approx(275.0, rel=0.005)


def test_estimate_uses_the_executed_time_for_nvls_allreduce_only():
    nvls = nccl_estimate(H100, "all-reduce", 64 * MIB, V18)
    assert nvls.algorithm == NcclAlgo.NVLS
    assert nvls.time_s > nvls.model_time_s  # 8 loops of 8 MiB: step hand-overs and one loop not overlapped
    ring = nccl_estimate(H100, "all-gather", 64 * MIB, V18)
    assert ring.time_s == pytest.approx(ring.latency_term_s + ring.bandwidth_term_s)


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=0, max_value=34), st.sampled_from([2, 4, 8, 16, 32]), st.sampled_from([V18, V20]))
def test_time_never_drops_when_the_size_doubles(log_size, gpus, version):
    system = nccl_system(load_cluster("dgx-h100"), gpus)
    small = nccl_estimate(system, "all-reduce", 1 << log_size, version)
    big = nccl_estimate(system, "all-reduce", 2 << log_size, version)
    assert 0 < small.time_s <= big.time_s


@pytest.mark.parametrize("version, nodes, size, chunk", [
    (V20, 2, 2 << 30, 524288), (V20, 2, (2 << 30) - 1, 262144), (V20, 2, 512 * MIB, 262144),
    (V20, 2, 512 * MIB - 1, 131072), (V20, 2, 64 * MIB, 131072), (V20, 2, 64 * MIB - 1, 65536),
    (V20, 2, 8 * MIB, 65536), (V20, 2, 8 * MIB - 1, 32768),
    (V20, 4, 8 << 30, 65536), (V20, 4, 8 * MIB - 1, 32768), (V18, 4, 2 << 30, 524288)])
def test_nvls_tree_chunk_follows_its_own_enqueue_thresholds(version, nodes, size, chunk):
    # one Simple step (4 MiB / 8) to start, 64 KiB from 4 nodes in 2.20.5 only; 128 concurrent ops:
    # 32 x 128 x 512 KiB = 2 GiB, 16 x 128 x 256 KiB = 512 MiB, 4 x 128 x 128 KiB = 64 MiB, 1 x 128 x 64 KiB = 8 MiB
    assert nvls_tree_chunk_bytes(version, size, 16, 8, nodes) == chunk


def test_tree_depth_is_ncclGetBtree_depth():
    assert [tree_depth(n) for n in (1, 2, 3, 4, 5, 8, 9, 16)] == [0, 1, 2, 2, 3, 3, 4, 4]


def test_nvls_tree_pipeline_fills_through_the_tree_hops():
    # 64 MiB on 2 nodes: 128 KiB NVLS-Tree chunks; 2 hops (up and down) of 16 channels x 128 KiB over one GPU's
    # 50 GB/s NIC share, on top of the node-local stages timed with the same chunk
    args = (V20, 64 * MIB, 16, 8, 51.0, 266.67, 266.67, 2)
    lat_t, bw_t = nvls_allreduce_terms_s(*args, algorithm=NcclAlgo.NVLS_TREE, nic_gbps_per_gpu=50.0)
    loops = 64 * MIB // (16 * 8 * 131072)
    assert lat_t == pytest.approx((51.0 + (loops + 1) * 3.4) * 1e-6)
    hops_s = 2 * 1 * 131072 * 16 / 50e9
    node_local_s = (64 * MIB / 16 + 8 * 131072) * 16 / (1 / (1 / 275e9 - 3.4e-6 / (16 * 8 * 131072)))
    assert bw_t == pytest.approx(node_local_s + hops_s, rel=1e-6)
    # a message below one loop sends each head's share of the channel, not a whole chunk
    _, small = nvls_allreduce_terms_s(V20, 1 * MIB, 16, 8, 51.0, 266.67, 266.67, 2, algorithm=NcclAlgo.NVLS_TREE,
                                      nic_gbps_per_gpu=50.0)
    _, small_nvls = nvls_allreduce_terms_s(V20, 1 * MIB, 16, 8, 51.0, 266.67, 266.67, 2)
    assert small - small_nvls == pytest.approx(2 * (MIB / 16 / 8) * 16 / 50e9, rel=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=10, max_value=34), st.integers(min_value=2, max_value=64), st.sampled_from([V18, V20]),
       st.floats(min_value=5.0, max_value=100.0))
def test_tree_hops_add_exactly_their_store_and_forward_time(log_size, nodes, version, nic_gbps):
    size = float(1 << log_size)
    args = (version, size, 16, 8, 51.0, 266.67, 266.67, nodes)
    lat_inf, local = nvls_allreduce_terms_s(*args, algorithm=NcclAlgo.NVLS_TREE)
    lat, with_hops = nvls_allreduce_terms_s(*args, algorithm=NcclAlgo.NVLS_TREE, nic_gbps_per_gpu=nic_gbps)
    chunk = nvls_tree_chunk_bytes(version, size, 16, 8, nodes)
    busiest = channel_bytes(version, size, 16, 8 * chunk)
    assert lat == lat_inf and local > 0
    assert with_hops - local == pytest.approx(2 * tree_depth(nodes) * min(chunk, busiest / 8) * 16 / (nic_gbps * 1e9))
