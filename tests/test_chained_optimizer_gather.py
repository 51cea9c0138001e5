"""Megatron-Core's ChainedOptimizer gathers an MoE model's parameters once per DistributedOptimizer."""

import pytest

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.analyze.chained_optimizer import MOE_CHAINED_OPTIMIZERS, step_param_gather_passes
from distcalc.parallel import ParallelConfig


def test_passes_only_for_moe_under_the_distributed_optimizer_without_overlap():
    assert step_param_gather_passes(True, False, True) == MOE_CHAINED_OPTIMIZERS == 2
    assert step_param_gather_passes(True, True, True) == 1  # gathers issued from the forward pre-hooks, once
    assert step_param_gather_passes(True, False, False) == 1  # dense model: one DistributedOptimizer
    assert step_param_gather_passes(False, False, True) == 1  # no distributed optimizer: nothing gathered


def _dp_on_link(model, ep, overlap_param_gather):
    config = ParallelConfig(gpus=8, tp=1, dp=8, ep=ep, micro_batch=1, global_batch=32, seq_len=4096,
                            distributed_optimizer=True)
    options = AnalyzeOptions(gpu_speed_cv=0.0, distributed_optimizer=True, overlap_grad_reduce=False,
                             overlap_param_gather=overlap_param_gather)
    r = analyze(model, "dgx-b200", config, options)
    return r.time_breakdown["dp_on_link_s"], r


def test_moe_model_pays_the_parameter_gather_twice():
    """Mixtral 8x7B at EP 8 (expert-DP of one rank: only the dense parameters are gathered): with the gather
    not overlapped the DP time on the link grows by exactly one more updated-parameter AllGather, and the
    report's AllGather row counts two per step."""
    twice, report = _dp_on_link("mixtral-8x7b", 8, False)
    once, _ = _dp_on_link("mixtral-8x7b", 8, True)
    ag = [m for m in report.communication if m["note"] == "updated-parameter AllGather"]
    assert len(ag) == 1 and ag[0]["count"] == 2
    assert twice - once == pytest.approx(ag[0]["time_s"] / 2, rel=1e-9)
    assert twice > once > 0
    dp = [o for o in report.overlaps if o["dim"] == "dp"]
    assert len(dp) == 1 and "x2" in dp[0]["collectives"]  # the overlaps report says why the gather costs twice


def test_dense_model_gathers_once():
    off, report = _dp_on_link("llama3-8b", 1, False)
    on, _ = _dp_on_link("llama3-8b", 1, True)
    assert off == pytest.approx(on, rel=1e-12)
    ag = [m for m in report.communication if m["note"] == "updated-parameter AllGather"]
    assert len(ag) == 1 and ag[0]["count"] == 1
    assert not [o for o in report.overlaps if "x2" in o["collectives"]]


def test_dispatcher_sends_the_routing_probabilities_in_their_own_alltoall():
    """Megatron-Core >= 0.13 (moe_dispatch_probs): one more AllToAll forward and one backward per MoE layer and
    micro-batch, of one element per routed slot; the EP time grows by exactly their priced time."""
    from distcalc.traffic import ep_layer_messages

    msgs = ep_layer_messages(1, 4096, 5120, 2, 1, 8, 6, probs=1)
    probs = [m for m in msgs if "probabilit" in m.note]
    assert [float(m.count) for m in probs] == [1.0, 1.0, 0.0]  # forward, backward, recompute (not full)
    assert float(probs[0].size_bytes) == 4096 * 6 * 2
    assert all(float(m.count) == 0 for m in ep_layer_messages(1, 4096, 5120, 2, 1, 8, 6) if "probabilit" in m.note)
    config = ParallelConfig(gpus=8, tp=1, dp=8, ep=8, micro_batch=1, global_batch=32, seq_len=4096,
                            distributed_optimizer=True)
    base = AnalyzeOptions(gpu_speed_cv=0.0, distributed_optimizer=True)
    off = analyze("mixtral-8x7b", "dgx-b200", config, base)
    on = analyze("mixtral-8x7b", "dgx-b200", config, base.model_copy(update=dict(moe_dispatch_probs=True)))
    rows = [m for m in on.communication if "probabilit" in m["note"]]
    assert len(rows) == 2 and not [m for m in off.communication if "probabilit" in m["note"]]
    added = on.time_breakdown["ep_exposed_s"] - off.time_breakdown["ep_exposed_s"]
    assert added == pytest.approx(sum(m["exposed_s"] for m in rows), rel=1e-6)
    assert added > 0


def test_router_kernels_are_the_counted_parts():
    """Megatron-Core's unfused router: top-k always, the group-limited selection, the capacity mask and the
    auxiliary loss where they run; each kernel costs at least the device's per-kernel overhead."""
    from distcalc.compute import load_device
    from distcalc.compute.moe import (ROUTER_AUX_LOSS_KERNELS, ROUTER_CAPACITY_KERNELS,
                                      ROUTER_GROUP_LIMITED_KERNELS, ROUTER_TOPK_KERNELS, router_kernel_counts,
                                      router_times)
    from distcalc.hardware import load_gpu

    assert router_kernel_counts(False, False, False) == ROUTER_TOPK_KERNELS == (12, 5)
    assert router_kernel_counts() == (18, 6)  # capacity-bound by default
    full = router_kernel_counts(True, True, True)
    assert full == tuple(sum(p) for p in zip(ROUTER_TOPK_KERNELS, ROUTER_GROUP_LIMITED_KERNELS,
                                             ROUTER_CAPACITY_KERNELS, ROUTER_AUX_LOSS_KERNELS)) == (45, 15)
    device = load_device(load_gpu("b200"))
    f, b = router_times(device, 4096, 160, full)
    assert float(f) == pytest.approx(45 * (device.kernel_overhead_s + 4 * 4096 * 160 / device.memory_bandwidth_bytes_per_s))
    assert float(b) == pytest.approx(15 * (device.kernel_overhead_s + 4 * 4096 * 160 / device.memory_bandwidth_bytes_per_s))


def test_deepseek_rows_run_the_group_limited_router_with_its_sequence_aux_loss():
    """SimuMax's DeepSeek rows: group-limited top-k (moe_detail) and the launcher's seq_aux_loss; their step
    time grows by the added router kernels of each MoE layer and micro-batch."""
    from distcalc.validation.published import comparisons

    row = next(c for c in comparisons() if c.run.case_id == "simumax_b200_deepseekv2_tp1_ep8_pp1_dp8_l4_mbc4_cef")
    o = row.inputs.options
    assert o.moe_router_group_limited and o.moe_aux_loss
    plain = o.model_copy(update=dict(moe_router_group_limited=False, moe_aux_loss=False))
    i = row.inputs
    r_full = analyze(i.spec, i.cluster, i.config, o)
    r_plain = analyze(i.spec, i.cluster, i.config, plain)
    assert r_full.time_breakdown["compute_s"] > r_plain.time_breakdown["compute_s"]
