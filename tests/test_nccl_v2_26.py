"""NCCL 2.26.2's tuning model (github.com/NVIDIA/nccl v2.26.2-1, src/graph/tuning.cc, src/enqueue.cc,
src/transport/nvls.cc): what changed against 2.20.5, each pinned to the value in NCCL's source."""

from __future__ import annotations

import pytest

from distcalc.cluster import load_cluster
from distcalc.collective.nccl_cluster import nccl_system
from distcalc.collective.nccl_constants import NcclAlgo, NcclProto, NcclVersion, parse_version
from distcalc.collective.nccl_graph import NcclSystem
from distcalc.collective.nccl_nvls import channel_bytes, nvls_tree_chunk_bytes
from distcalc.collective.nccl_tuner import nccl_estimate, tuning_table
from distcalc.errors import AlgorithmError

V18, V20, V26 = NcclVersion.V2_18_5, NcclVersion.V2_20_5, NcclVersion.V2_26_2
H100 = nccl_system(load_cluster("dgx-h100"), 8)
TWO_NODES = nccl_system(load_cluster("dgx-h100"), 16)


def _table(system, version, kind="all-reduce"):
    return {(e.algorithm, e.protocol): e for e in tuning_table(system, version, kind)}


def test_version_is_parsed_like_the_others():
    assert parse_version("2.26.2") == parse_version("v2.26.2-1") == V26


def test_tree_simple_latency_across_nodes():
    # 2.26.2: baseLat 8.4 + 2 x (7 NVLink hops x 4.0 + log2(2) x 14 network) = 92.4 us; 2.20.5: 0 + 2 x (7 x 28 + 28)
    assert _table(TWO_NODES, V26)[(NcclAlgo.TREE, NcclProto.SIMPLE)].latency_us == pytest.approx(92.4)
    assert _table(TWO_NODES, V20)[(NcclAlgo.TREE, NcclProto.SIMPLE)].latency_us == pytest.approx(448.0)


def test_nvls_latency_is_25_us_on_nvlink():
    assert _table(H100, V26)[(NcclAlgo.NVLS, NcclProto.SIMPLE)].latency_us == pytest.approx(25.0)
    assert _table(H100, V20)[(NcclAlgo.NVLS, NcclProto.SIMPLE)].latency_us == pytest.approx(23.0)


def test_ring_ll_share_and_hopper_ll_cap_on_one_node():
    # One H100 node: ring graph 12 channels x 30 GB/s = 360 GB/s. 2.26.2: min(141, 360 x 0.5) = 141;
    # 2.20.5: min(87.7, 360 / 4) = 87.7; algorithm bandwidth x 8 ranks / 14 steps.
    assert _table(H100, V26)[(NcclAlgo.RING, NcclProto.LL)].bandwidth_gbps == pytest.approx(141.0 * 8 / 14)
    assert _table(H100, V20)[(NcclAlgo.RING, NcclProto.LL)].bandwidth_gbps == pytest.approx(87.7 * 8 / 14)


def test_ring_allreduce_counts_two_network_steps_per_node_pair():
    # 2.26.2: nInterSteps = 2 (nNodes - 1) = 2; 2.20.5: 2 nNodes = 4. Ring/LL, 30 steps, each intra-node step
    # max(NVLink 0.6, Intel net overhead 1.0) us, each network step 2.7 us.
    assert _table(TWO_NODES, V26)[(NcclAlgo.RING, NcclProto.LL)].latency_us == pytest.approx(6.6 + 28 * 1.0 + 2 * 2.7)
    assert _table(TWO_NODES, V20)[(NcclAlgo.RING, NcclProto.LL)].latency_us == pytest.approx(6.6 + 26 * 1.0 + 4 * 2.7)


def test_nvls_tree_chunk_starts_at_nvls_chunksize():
    # 16 channels x 8 heads; a 16 GiB operation keeps the first chunk: 2.26.2 nvlsChunkSize 128 KiB, 2.20.5 512 KiB.
    assert nvls_tree_chunk_bytes(V26, 1 << 34, 16, 8, 2) == 128 << 10
    assert nvls_tree_chunk_bytes(V20, 1 << 34, 16, 8, 2) == 512 << 10
    assert nvls_tree_chunk_bytes(V26, 1 << 34, 16, 8, 4) == 64 << 10  # NCCL_NVLSTREE_MAX_CHUNKSIZE from 4 nodes


@pytest.mark.parametrize("size, v26, v20", [
    (1024, 1024, 1024),                # one cell / one alignment unit holds it
    (64 << 10, 8 << 10, 4 << 10),      # 2.26.2: 8 channels of one 8 KiB cell; 2.20.5: 16 x 4 KiB
    (1 << 20, 64 << 10, 64 << 10),     # both split evenly once every channel has more than a cell
    ((1 << 20) + 8, 72 << 10, 68 << 10),
])
def test_channel_share_by_traffic_cells(size, v26, v20):
    assert channel_bytes(V26, size, 16, 8 * (16 << 10)) == v26
    assert channel_bytes(V20, size, 16, 8 * (16 << 10)) == v20


def test_pat_cases_are_refused_and_nvls_allgather_stays_on_one_node():
    one_per_node = NcclSystem(nodes=4, gpus_per_node=1, compute_capability=90, nvlinks_per_gpu=18, nics_per_node=8,
                              nic_bandwidth_gbps=50.0)
    with pytest.raises(AlgorithmError, match="PAT"):
        nccl_estimate(one_per_node, "all-gather", 1 << 20, V26)
    assert nccl_estimate(one_per_node, "all-gather", 1 << 20, V20).algorithm == NcclAlgo.RING
    sharp = NcclSystem(nodes=2, gpus_per_node=8, compute_capability=90, nvlinks_per_gpu=18, nics_per_node=8,
                       nic_bandwidth_gbps=50.0, collnet=True)
    assert (NcclAlgo.NVLS, NcclProto.SIMPLE) in _table(sharp, V20, "all-gather")
    assert (NcclAlgo.NVLS, NcclProto.SIMPLE) not in _table(sharp, V26, "all-gather")
    assert (NcclAlgo.NVLS, NcclProto.SIMPLE) in _table(H100, V26, "all-gather")


def test_tree_runs_all_threads():
    small = nccl_estimate(TWO_NODES, "all-reduce", 4096, V26)
    assert small.algorithm == NcclAlgo.TREE and small.threads == 640
    assert nccl_estimate(TWO_NODES, "all-reduce", 4096, V20).threads < 640


def test_older_releases_unchanged_by_the_new_fields():
    assert _table(TWO_NODES, V18)[(NcclAlgo.RING, NcclProto.LL)].latency_us == pytest.approx(6.6 + 26 * 1.0 + 4 * 2.7)
