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


def test_dense_model_gathers_once():
    off, report = _dp_on_link("llama3-8b", 1, False)
    on, _ = _dp_on_link("llama3-8b", 1, True)
    assert off == pytest.approx(on, rel=1e-12)
    ag = [m for m in report.communication if m["note"] == "updated-parameter AllGather"]
    assert len(ag) == 1 and ag[0]["count"] == 1


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
