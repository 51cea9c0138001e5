"""ZeRO-3 / FSDP per-unit overlap (distcalc.analyze.fsdp) and the hierarchical pipeline fill."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.analyze import AnalyzeOptions, FsdpSharding, analyze
from distcalc.analyze.fsdp import OVERLAP_COMPUTE_SLOWDOWN, fsdp_copy_s, fsdp_exposure
from distcalc.compute import load_device
from distcalc.model import load_model
from distcalc.cluster import load_cluster
from distcalc.parallel import ParallelConfig
from distcalc.placement import place_groups
from distcalc.traffic import Dim

times = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def test_compute_bound_units_expose_only_the_ends():
    """Gathers shorter than a block's compute hide; the root's and the first block's gather, the last
    block's and the root's reduce-scatter stay exposed; contention is the slowdown × overlapped compute."""
    e = fsdp_exposure(32, 0.020, 0.040, 0.005, 0.008, 0.010, 0.016, slowdown=0.2)
    assert e.forward_exposed_s == pytest.approx(0.010 + 0.005)
    assert e.backward_exposed_s == pytest.approx(0.008 + 0.016)
    assert e.contention_forward_s == pytest.approx(0.2 * 31 * 0.005)
    assert e.contention_backward_s == pytest.approx(0.2 * 31 * 0.013)


def test_communication_bound_units_expose_the_difference():
    """A block whose gather (+ reduce-scatter in backward) outlasts its compute exposes the excess."""
    e = fsdp_exposure(10, 0.010, 0.020, 0.030, 0.020, 0.0, 0.0, slowdown=0.0)
    assert e.forward_exposed_s == pytest.approx(0.030 + 9 * 0.020)
    assert e.backward_exposed_s == pytest.approx(9 * 0.030 + 0.020)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 128), times, times, times, times, times, times)
def test_exposure_bounded_by_serial_and_non_negative(units, f, b, g, r, g0, r0):
    """Never negative, never more than running every collective after the compute (plus contention)."""
    e = fsdp_exposure(units, f, b, g, r, g0, r0, slowdown=OVERLAP_COMPUTE_SLOWDOWN)
    for x in (e.forward_exposed_s, e.backward_exposed_s, e.contention_forward_s, e.contention_backward_s):
        assert np.isfinite(x) and x >= 0
    assert e.forward_exposed_s <= units * g + g0 + 1e-12
    assert e.backward_exposed_s <= units * (g + r) + r0 + 1e-12
    assert e.contention_forward_s <= OVERLAP_COMPUTE_SLOWDOWN * units * f + 1e-12


def test_bad_slowdown_is_refused():
    with pytest.raises(ValueError, match="slowdown"):
        fsdp_exposure(4, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0, slowdown=1.5)


def test_fsdp_slower_on_a_slower_network_and_with_fp32_reduction():
    """Same run, Llama-2-7B-like FSDP on 128 A100: fewer NICs or fp32 gradients never make it faster."""
    config = ParallelConfig(gpus=128, dp=128, zero=3, micro_batch=2, global_batch=256, seq_len=4096)
    fast = load_cluster("dgx-a100")
    slow = fast.model_copy(update={"nics_per_node": 2})
    bf16 = AnalyzeOptions(grad_reduce_bytes=2)
    t_fast = analyze("llama2-7b", fast, config, bf16).step_time_s
    t_slow = analyze("llama2-7b", slow, config, bf16).step_time_s
    t_fp32 = analyze("llama2-7b", slow, config, AnalyzeOptions(grad_reduce_bytes=4)).step_time_s
    assert t_fast < t_slow < t_fp32
    free = analyze("llama2-7b", slow, config, AnalyzeOptions(grad_reduce_bytes=2, overlap_compute_slowdown=0.0))
    assert free.step_time_s < t_slow


def test_hierarchical_fill_is_the_harmonic_mean_of_the_ring_hops():
    """16 nodes × 8 GPUs: 16 of the 128 ring hops cross a NIC, the other 112 NVLink."""
    cluster = load_cluster("dgx-a100")
    dp = place_groups(cluster, dp=128)[Dim.DP]
    intra = cluster.intra.bandwidth_bytes_per_s * cluster.intra.efficiency
    inter = cluster.inter_bandwidth_per_gpu_bytes_per_s * cluster.inter.efficiency
    share = 16 / 128
    assert dp.fill_bandwidth_bytes_per_s == pytest.approx(1 / (share / inter + (1 - share) / intra))
    assert inter < dp.fill_bandwidth_bytes_per_s < intra


def test_overlapped_dp_and_cp_pay_the_compute_slowdown():
    """Megatron DP reduction overlapped with backward and CP ring passes slow the compute they overlap:
    free overlap (slowdown 0) is faster, and non-overlapped DP is slower still."""
    config = ParallelConfig(gpus=64, tp=4, cp=2, dp=8, micro_batch=1, global_batch=64, seq_len=32768,
                            sequence_parallel=True, distributed_optimizer=True)
    opts = dict(distributed_optimizer=True)
    free = analyze("llama2-7b", "dgx-h100", config, AnalyzeOptions(overlap_compute_slowdown=0.0, **opts))
    paid = analyze("llama2-7b", "dgx-h100", config, AnalyzeOptions(**opts))
    assert paid.time_breakdown["cp_exposed_s"] > free.time_breakdown["cp_exposed_s"]
    assert paid.time_breakdown["dp_exposed_s"] > free.time_breakdown["dp_exposed_s"]
    serial = analyze("llama2-7b", "dgx-h100", config,
                     AnalyzeOptions(overlap_grad_reduce=False, overlap_param_gather=False, **opts))
    assert serial.time_breakdown["dp_exposed_s"] >= paid.time_breakdown["dp_exposed_s"]


def test_last_gradient_bucket_and_first_parameter_bucket_stay_exposed():
    """Megatron DDP buckets (max(40e6, 1e6·dp) parameters): even with a backward window far longer than the
    reduction, the last gradient bucket's ReduceScatter and the first parameter bucket's AllGather are exposed."""
    from distcalc.placement import effective_time_s
    from distcalc.traffic import Comm

    cluster = load_cluster("dgx-h100")
    config = ParallelConfig(gpus=16, dp=16, micro_batch=1, global_batch=256, seq_len=4096,
                            distributed_optimizer=True)
    options = AnalyzeOptions(distributed_optimizer=True, overlap_compute_slowdown=0.0)
    report = analyze("llama2-7b", cluster, config, options)
    dp = place_groups(cluster, dp=16)[Dim.DP]
    bucket = 40e6
    expected = (effective_time_s(Comm.REDUCE_SCATTER, bucket * 4, dp)[0]
                + effective_time_s(Comm.ALL_GATHER, bucket * 2, dp)[0])
    assert report.time_breakdown["dp_exposed_s"] == pytest.approx(float(expected), rel=1e-9)
    assert report.time_breakdown["dp_exposed_s"] < report.time_breakdown["dp_on_link_s"]


def test_fsdp2_copies_count_gathered_and_reduced_bytes():
    """FSDP2's copy-out reads and writes every gathered parameter (forward: all units and the root;
    backward: the U - 1 re-gathered blocks); its copy-in reads the bf16 gradient and writes the reduce dtype."""
    forward, backward = fsdp_copy_s(32, 1e6, 3e6, 2, 4, 1e12, 0.0)
    assert forward == pytest.approx((32e6 + 3e6) * 4 / 1e12)
    assert backward == pytest.approx((31e6 * 4 + 35e6 * 6) / 1e12)
    f1, b1 = fsdp_copy_s(32, 1e6, 3e6, 2, 4, 1e12, 1e-6)
    assert f1 - forward == pytest.approx(33e-6) and b1 - backward == pytest.approx(64e-6)


def test_per_parameter_sharding_adds_the_copies_to_zero3_only():
    config = ParallelConfig(gpus=64, dp=64, zero=3, micro_batch=1, global_batch=64, seq_len=8192)
    flat = analyze("llama3-8b", "dgx-a100", config)
    fsdp2 = analyze("llama3-8b", "dgx-a100", config, AnalyzeOptions(fsdp_sharding=FsdpSharding.PER_PARAMETER))
    params = load_model("llama3-8b").parameters  # tp = pp = 1: every parameter passes through this rank
    device = load_device("a100-80gb")
    # every parameter copied out twice (bar the last block and the root in backward) and copied in once
    lower = params * (2 * 2 + 2 + 4) / device.memory_bandwidth_bytes_per_s
    upper = params * (2 * 2 * 2 + 2 + 4) / device.memory_bandwidth_bytes_per_s
    assert lower < fsdp2.step_time_s - flat.step_time_s < upper * 1.1
    zero1 = config.model_copy(update={"zero": 1})
    assert (analyze("llama3-8b", "dgx-a100", zero1, AnalyzeOptions(fsdp_sharding=FsdpSharding.PER_PARAMETER)).step_time_s
            == analyze("llama3-8b", "dgx-a100", zero1).step_time_s)
