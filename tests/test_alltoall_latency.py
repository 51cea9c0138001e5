"""AllToAll on a link whose all-to-all α per peer is measured apart (NVLink 5: SimuMax's DGX B200 fit)."""

import pytest

from distcalc.cluster import load_cluster, load_link
from distcalc.placement import effective_time_elementwise_s, group_placement
from distcalc.traffic import Comm, Dim


def test_nvlink5_states_the_measured_alltoall_alpha():
    link = load_link("nvlink5")
    assert link.alltoall_latency_s == pytest.approx(7.30e-6)
    assert load_link("nvlink4").alltoall_latency_s is None


@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("size_bytes", [49152.0, 251658240.0])
def test_b200_alltoall_follows_the_measured_fit(n, size_bytes):
    """(N−1)·7.30 µs + f·M/(η_a2a·B), the form and constants of SimuMax's nccl-tests fit (busbw 0.5968 ×
    900 GiB/s, latency_us 7.3039 with offset −1)."""
    cluster = load_cluster("dgx-b200")
    t, algo = effective_time_elementwise_s(Comm.ALL_TO_ALL, size_bytes, group_placement(cluster, Dim.EP, n, 1))
    expected = (n - 1) * 7.30e-6 + (n - 1) / n * size_bytes / (0.641 * 900e9)
    assert float(t) == pytest.approx(expected, rel=1e-3)
    assert algo == "pairwise"


def test_links_without_a_measured_alpha_keep_one_alpha():
    cluster = load_cluster("dgx-h100")
    placement = group_placement(cluster, Dim.EP, 8, 1)
    t, algo = effective_time_elementwise_s(Comm.ALL_TO_ALL, 1e6, placement)
    link = cluster.intra
    assert algo == "direct"
    assert float(t) == pytest.approx(link.latency_s + 7 / 8 * 1e6 / (link.bandwidth_bytes_per_s * link.efficiency),
                                     rel=1e-6)
