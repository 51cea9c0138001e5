"""NCCL tuning model (v2.18.5 / v2.20.5 re-expressed): graphs, per-protocol table, choice, channels."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from distcalc.cluster import load_cluster
from distcalc.collective.nccl_cluster import nccl_system
from distcalc.collective.nccl_constants import NcclAlgo, NcclProto, NcclVersion, parse_version
from distcalc.collective.nccl_graph import graphs
from distcalc.collective.nccl_tuner import nccl_estimate, tuning_table
from distcalc.errors import AlgorithmError

H100 = nccl_system(load_cluster("dgx-h100"), 8)
A100 = nccl_system(load_cluster("dgx-a100"), 8)


def test_graphs_follow_the_search_on_nvswitch_nodes():
    # DGX A100: 6 rings at 40 GB/s (= 12 NVLinks x 20) doubled to 12 x 20; H100: 6 x 60 -> 12 x 30;
    # NVLS: one channel per GPU, head port carries 2s: 9 x 40 <= 18 x 20.
    a100 = graphs(A100, NcclVersion.V2_18_5)
    h100 = graphs(H100, NcclVersion.V2_18_5)
    assert (a100[NcclAlgo.RING].channels, a100[NcclAlgo.RING].bw_intra_gbps) == (12, 20.0)
    assert NcclAlgo.NVLS not in a100
    assert (h100[NcclAlgo.RING].channels, h100[NcclAlgo.RING].bw_intra_gbps) == (12, 30.0)
    assert (h100[NcclAlgo.NVLS].channels, h100[NcclAlgo.NVLS].bw_intra_gbps) == (8, 40.0)


def test_table_values_are_nccls_formulas():
    table = {(e.algorithm, e.protocol): e for e in tuning_table(H100, NcclVersion.V2_18_5, "all-reduce")}
    ring_ll = table[(NcclAlgo.RING, NcclProto.LL)]
    assert ring_ll.latency_us == pytest.approx(6.6 + 14 * 0.6)              # baseLat + nsteps * hwLat
    assert ring_ll.bandwidth_gbps == pytest.approx(87.7 * 8 / 14)           # min(llMaxBw, 360/4) * N/nsteps
    nvls = table[(NcclAlgo.NVLS, NcclProto.SIMPLE)]
    assert (nvls.latency_us, nvls.bandwidth_gbps) == pytest.approx((23.0, 320 * 5 / 6))
    tree_ll128 = table[(NcclAlgo.TREE, NcclProto.LL128)]
    assert tree_ll128.latency_us == pytest.approx(14.0 + 2 * 7 * 1.25)
    assert (NcclAlgo.NVLS_TREE, NcclProto.SIMPLE) not in table               # single node


def test_choice_moves_from_ll_to_nvls_with_size():
    small = nccl_estimate(H100, "all-reduce", 1024, NcclVersion.V2_18_5)
    large = nccl_estimate(H100, "all-reduce", 1 << 30, NcclVersion.V2_18_5)
    assert (small.algorithm, small.protocol) == (NcclAlgo.RING, NcclProto.LL)
    assert small.channels == 1 and large.channels == 16
    assert (large.algorithm, large.protocol) == (NcclAlgo.NVLS, NcclProto.SIMPLE)
    a100 = nccl_estimate(A100, "all-reduce", 1 << 30, NcclVersion.V2_18_5)
    # the communicator runs twice the graph's 12 rings (ncclTopoPostset)
    assert (a100.algorithm, a100.protocol, a100.channels) == (NcclAlgo.RING, NcclProto.SIMPLE, 24)
    ll = nccl_estimate(A100, "all-reduce", 256 << 10, NcclVersion.V2_18_5)
    assert ll.channels == 8  # 256 KiB / (512 threads x 8 B x 8 ranks)
    assert ll.bandwidth_term_s == pytest.approx(3 * (256 << 10) / (60e9 * 8 / 14))  # 24/8 of NCCL's LL bandwidth


def test_restriction_and_fallback():
    forced = nccl_estimate(H100, "all-reduce", 1024, NcclVersion.V2_18_5, algorithms=[NcclAlgo.NVLS])
    assert forced.algorithm == NcclAlgo.NVLS
    with pytest.raises(AlgorithmError):  # 2.18.5: NCCL_ALGO=NVLS on A100 leaves nothing
        nccl_estimate(A100, "all-reduce", 1024, NcclVersion.V2_18_5, algorithms=[NcclAlgo.NVLS])
    fallback = nccl_estimate(A100, "all-reduce", 1024, NcclVersion.V2_20_5, algorithms=[NcclAlgo.NVLS])
    assert fallback.algorithm == NcclAlgo.RING  # 2.20.5 ring backup
    with pytest.raises(AlgorithmError):
        nccl_estimate(H100, "all-to-all", 1024)
    with pytest.raises(AlgorithmError):
        parse_version("2.99")


def test_multi_node_uses_network_latencies():
    two = nccl_system(load_cluster("dgx-h100"), 16)
    assert (two.nodes, two.gpus_per_node) == (2, 8)
    est = nccl_estimate(two, "all-reduce", 64 << 20)
    assert est.algorithm in (NcclAlgo.RING, NcclAlgo.TREE, NcclAlgo.NVLS_TREE)
    assert est.time_s > nccl_estimate(H100, "all-reduce", 64 << 20).time_s
    with pytest.raises(AlgorithmError):
        nccl_system(load_cluster("dgx-h100"), 12)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=34), st.sampled_from(["all-reduce", "all-gather", "reduce-scatter",
                                                                "broadcast", "reduce"]),
       st.sampled_from([1, 2, 4, 8, 16, 32]), st.sampled_from(list(NcclVersion)))
def test_time_positive_and_monotone(log_size, kind, gpus, version):
    system = nccl_system(load_cluster("dgx-h100"), gpus)
    size = 1 << log_size
    small = nccl_estimate(system, kind, size, version)
    big = nccl_estimate(system, kind, 2 * size, version)
    if gpus == 1:
        assert small.time_s == 0.0
        return
    assert 0 < small.time_s < float("inf") and small.latency_term_s >= 0 and small.bandwidth_term_s >= 0
    assert big.model_time_s >= small.model_time_s * (1 - 1e-9)  # NCCL's own estimate never drops with size


def test_no_nvls_with_two_gpus_per_node():
    # nvls.cc ncclNvlsInit (2.18.5 and 2.20.5): NVLS stays off when the node has <= 2 GPUs of the communicator, so
    # NCCL_ALGO=NVLS leaves nothing to run: 2.20.5 falls back to Ring, 2.18.5 reports no algorithm.
    cluster = load_cluster("dgx-h100")
    assert NcclAlgo.NVLS not in graphs(nccl_system(cluster, 2), NcclVersion.V2_20_5)
    assert NcclAlgo.NVLS in graphs(nccl_system(cluster, 3), NcclVersion.V2_20_5)
    two = nccl_system(cluster, 2)
    assert nccl_estimate(two, "all-reduce", 1 << 26, NcclVersion.V2_20_5, [NcclAlgo.NVLS]).algorithm == NcclAlgo.RING
    with pytest.raises(AlgorithmError, match="no NCCL algorithm"):
        nccl_estimate(two, "all-reduce", 1 << 26, NcclVersion.V2_18_5, [NcclAlgo.NVLS])
