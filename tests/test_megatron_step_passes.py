"""Megatron-Core's per-step gradient passes and the B200 cross-entropy kernels (SimuMax's measured rates)."""

import numpy as np
import pytest

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.compute import head_times, load_device
from distcalc.compute.flops import model_dims
from distcalc.compute.loss import (CE_BACKWARD_BYTES_PER_LOGIT, CE_BYTES_PER_LOGIT, CE_FORWARD_BYTES_PER_LOGIT,
                                   CE_KERNELS, CrossEntropyKernel, cross_entropy_times)
from distcalc.hardware import load_gpu
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig
from distcalc.validation.published import comparisons
from distcalc.validation.published.stack_kernels import legacy_step_passes

#: SimuMax's measured B200 cross-entropy kernels (MooreThreads/SimuMax@4dcaae5, configs/system/
#: b200_bf16_ceperm.json, accelerator.bandwidth): efficiency of 8000 GiB/s over its own byte count
SIMUMAX_CE = 0.3246108444537549 * 8000 * 2**30  # unfused: 38 + 14 B per logit (its ce_theoretical_bytes)
SIMUMAX_CE_FUSION = 0.2795145022199592 * 8000 * 2**30  # TE fused: 4 + 4 B per logit


def test_fused_cross_entropy_bytes_follow_the_kernels():
    # TE: online_softmax_kernel reads the 16-bit logits once; cross_entropy_backward_kernel reads and rewrites them
    assert CE_BYTES_PER_LOGIT[CrossEntropyKernel.TE_FUSED] == (2, 4)
    # Megatron native: logits_max (2 + 4), predicted_logits (4 + 4), loss div_ (4 + 4); gradients (4 + 2)
    assert CE_BYTES_PER_LOGIT[CrossEntropyKernel.NATIVE_FUSED] == (22, 6)
    assert CE_BYTES_PER_LOGIT[CrossEntropyKernel.UNFUSED] == (CE_FORWARD_BYTES_PER_LOGIT, CE_BACKWARD_BYTES_PER_LOGIT)


@pytest.mark.parametrize("kernel, simumax_bytes, simumax_rate", [
    (CrossEntropyKernel.UNFUSED, 38 + 14, SIMUMAX_CE), (CrossEntropyKernel.TE_FUSED, 4 + 4, SIMUMAX_CE_FUSION)])
def test_b200_cross_entropy_reproduces_simumax_measured_time(kernel, simumax_bytes, simumax_rate):
    """DeepSeek-V2's output layer (4096 tokens x 102,400 vocabulary): forward + backward time equals SimuMax's
    measured kernel time (its bytes over its measured rate; launches differ: its 30 us per op against 4 us per
    kernel here) within 0.5 %."""
    device = load_device(load_gpu("b200"))
    logits = 4096 * 102400
    f, b = cross_entropy_times(device, logits, kernel)
    launches = sum(CE_KERNELS[kernel]) * device.kernel_overhead_s
    assert float(f + b) - launches == pytest.approx(logits * simumax_bytes / simumax_rate, rel=0.005)


def test_unmeasured_gpus_stream_cross_entropy_at_the_generic_rate():
    device = load_device(load_gpu("h100-sxm"))
    assert device.cross_entropy_hbm_efficiency is None and device.fused_cross_entropy_hbm_efficiency is None
    for kernel in CrossEntropyKernel:
        f, b = cross_entropy_times(device, 1e9, kernel)
        (fwd_b, bwd_b), (fwd_k, bwd_k) = CE_BYTES_PER_LOGIT[kernel], CE_KERNELS[kernel]
        ov = device.kernel_overhead_s
        assert float(f) == pytest.approx(1e9 * fwd_b / device.memory_bandwidth_bytes_per_s + fwd_k * ov, rel=1e-9)
        assert float(b) == pytest.approx(1e9 * bwd_b / device.memory_bandwidth_bytes_per_s + bwd_k * ov, rel=1e-9)


@pytest.mark.parametrize("gpu", ["h100-sxm", "b200", "a100-80gb"])
def test_fusion_moves_fewer_bytes_than_the_unfused_loss(gpu):
    """The fused kernels are faster on every GPU, measured or not; the logits GEMMs are unchanged."""
    device = load_device(load_gpu(gpu))
    dims = model_dims(load_model("llama3-8b"))
    plain = head_times(dims, device, 1, 4096, 1)
    for kernel in (CrossEntropyKernel.NATIVE_FUSED, CrossEntropyKernel.TE_FUSED):
        fused = head_times(dims, device, 1, 4096, 1, cross_entropy=kernel)
        assert float(fused.output_forward_s) < float(plain.output_forward_s)
        assert float(fused.output_backward_s) < float(plain.output_backward_s)
        assert float(fused.output_wgrad_s) == float(plain.output_wgrad_s)


def _llama(dp):
    return ParallelConfig(gpus=8, tp=8 // dp, dp=dp, micro_batch=1, global_batch=4 * dp, seq_len=4096,
                          sequence_parallel=True, distributed_optimizer=True)


@pytest.mark.parametrize("dp", [1, 2, 4, 8])
def test_megatron_gradient_passes_cover_every_local_parameter(dp):
    """The NaN check reads the local fp32 gradient buffer (4 B per parameter); the 1/(DP·CP) scaling reads and
    writes it (8 B) only where DP·CP > 1 (the scaling factor is 1 otherwise)."""
    base = dict(gpu_speed_cv=0.0, distributed_optimizer=True)
    config = _llama(dp)
    without = analyze("llama3-8b", "dgx-b200", config, AnalyzeOptions(**base)).time_breakdown["optimizer_s"]
    with_passes = analyze("llama3-8b", "dgx-b200", config,
                          AnalyzeOptions(**base, grad_check_bytes_per_parameter=4.0,
                                         grad_prescale_bytes_per_parameter=8.0)).time_breakdown["optimizer_s"]
    local_params = 8.03e9 / config.tp  # Llama 3 8B, embedding and head split over TP too
    device = load_device(load_gpu("b200"))
    expected = local_params * (4.0 + (8.0 if dp > 1 else 0.0)) / device.memory_bandwidth_bytes_per_s
    assert with_passes - without == pytest.approx(expected, rel=0.02)


def test_simumax_rows_run_fused_cross_entropy_and_megatron_gradient_passes():
    """The mapping: SimuMax's ``_cef`` rows and Megatron-Bridge's performance runs (``cross_entropy_fusion_impl``
    "te" in both releases' scripts) with TE's fused loss; Megatron-LM launched at a pinned commit with its argument defaults (NaN check on, no averaging in the
    collective) gets the gradient passes; Megatron-LM's own DDP (SC21, Zero Bubble fork, 285068c8) its division of the
    gradients; no other source gets them."""
    seen = 0
    for c in comparisons():
        o = c.inputs.options if c.inputs is not None else None
        if o is None:
            continue
        simumax = c.run.source.startswith("SimuMax")
        expected = (CrossEntropyKernel.TE_FUSED if simumax or c.run.source.startswith("MegatronBridge")
                    else CrossEntropyKernel.UNFUSED)
        assert o.cross_entropy is expected
        # Megatron-LM's own (pre-Megatron-Core) DDP divides its gradients too (analyze.optimizer_passes)
        legacy = legacy_step_passes(c.run, o.grad_reduce_bytes)
        assert (o.grad_check_bytes_per_parameter, o.grad_prescale_bytes_per_parameter) == (
            (4.0, 8.0) if simumax else (0.0, legacy.grad_dp_pass_bytes if legacy else 0.0))
        seen += simumax
    assert seen == 43


def test_simumax_deepseek_step_time_moves_by_the_modelled_terms():
    """On the DeepSeek-V2 EP8 row the passes add 12 B x the local parameters (DP 8) to the step."""
    row = next(c for c in comparisons() if c.run.case_id == "simumax_b200_deepseekv2_tp1_ep8_pp1_dp8_l4_mbc4_cef")
    i = row.inputs
    base = analyze(i.spec, i.cluster, i.config, i.options.model_copy(update=dict(
        grad_check_bytes_per_parameter=0.0, grad_prescale_bytes_per_parameter=0.0)))
    full = analyze(i.spec, i.cluster, i.config, i.options)
    device = load_device(load_gpu("b200"))
    delta = full.time_breakdown["optimizer_s"] - base.time_breakdown["optimizer_s"]
    # dense 1.98 B + routed experts 11.32 B / EP 8 local parameters (SimuMax's count for this row: 3.40 B)
    assert delta * device.memory_bandwidth_bytes_per_s / 12.0 == pytest.approx(3.40e9, rel=0.03)
    assert np.isfinite(full.step_time_s) and full.step_time_s > base.step_time_s


def test_stage_moe_layers_put_deepseek_dense_layers_on_the_first_stage():
    """DeepSeek-V2 truncated to 4 layers (layer 0 dense): PP2 → first stage 1 MoE layer, last 2; PP1 → 3."""
    from distcalc.analyze.blocks import stage_moe_layers

    row = next(c for c in comparisons() if c.run.case_id == "simumax_b200_deepseekv2_tp1_ep4_pp2_dp4_l4_mbc4_cef")
    d = model_dims(row.inputs.spec)
    two = np.array([2.0])
    assert [float(x[0]) for x in stage_moe_layers(d, two, two, two)] == [1.0, 0.0, 2.0]
    four = np.array([4.0])
    assert [float(x[0]) for x in stage_moe_layers(d, four, four, four)] == [3.0, 0.0, 3.0]


def test_the_moe_heavier_last_stage_sets_the_pipeline():
    """The same row: the step grows by m x (the last stage's MoE layers − its average share) x (MoE − dense
    layer), and the EP AllToAll counted is the last stage's two layers', not 2 x 3/4 layer's."""
    row = next(c for c in comparisons() if c.run.case_id == "simumax_b200_deepseekv2_tp1_ep4_pp2_dp4_l4_mbc32_cef")
    i = row.inputs
    r = analyze(i.spec, i.cluster, i.config, i.options)
    ep_one_layer = r.time_breakdown["ep_exposed_s"] / 32 / 2
    assert ep_one_layer > 0
    # compute of the last stage per micro-batch = 2 MoE layers + the head; the dense layer is not on it
    from distcalc.compute.layer import layer_times
    from distcalc.compute import head_times as heads
    d, dev = model_dims(i.spec), load_device(load_gpu("b200"))
    kw = dict(micro_batch=1, seq_len=4096, tp=1, ep=4, flash_attention=1)
    from distcalc.compute.moe import router_kernel_counts
    router = router_kernel_counts(i.options.moe_router_group_limited, True, i.options.moe_aux_loss)
    moe = layer_times(d, dev, **kw, moe=True, router_kernels=router)
    h = heads(d, dev, 1, 4096, 1, cross_entropy=i.options.cross_entropy)
    expected = 2 * float(moe.forward_s + moe.backward_s) + float(h.output_forward_s + h.output_backward_s)
    assert r.time_breakdown["compute_s"] / 32 == pytest.approx(expected * r.gpu_variability["slowest_gpu_factor"], rel=1e-6)


def test_attention_kernels_respect_the_power_limited_rate():
    """Fused attention never runs faster than the sustained power-limited rate: binding on B200's forward
    kernel (0.60 x 2.25 PF > 1.09 PF), not on its backward (0.45 x 2.25 PF) nor anywhere on H100 (0.60 x 989 TF
    < 677 TF); the capped forward at 128k tokens, with its causal block tail (8 x 1024 query tiles on 148 SMs:
    x 1.018), is within 6 % of SimuMax's measured 0.50 of peak (causal; -5.1 %, -3.4 % before the tail)."""
    from distcalc.compute.attention import causal_forward_tail, flash_attention_times

    pairs = dict(batch_heads=8, q_len=131072, kv_len=131072, head_dim=128, v_head_dim=128)
    flops = 0.5 * 2.0 * 8 * 131072.0 ** 2 * 256
    b200 = load_device(load_gpu("b200"))
    f, b = flash_attention_times(b200, **pairs)
    tail = causal_forward_tail(b200.sm_count, 8, 131072)
    assert tail == pytest.approx(1 + 148 / 8192)
    assert tail * flops / (float(f) - b200.kernel_overhead_s) == pytest.approx(b200.power_limited_flops_per_s,
                                                                               rel=1e-9)
    assert 2.5 * flops / (float(b) - b200.kernel_overhead_s) == pytest.approx(
        b200.peak_flops_per_s * b200.flash_backward_efficiency, rel=1e-9)
    simumax_fwd = 1.0028 / 2 * b200.peak_flops_per_s  # sdp_fwd, 8 heads, 131072 tokens, non-causal convention
    assert flops / (float(f) - b200.kernel_overhead_s) == pytest.approx(simumax_fwd, rel=0.06)
    h100 = load_device(load_gpu("h100-sxm"))
    f, _ = flash_attention_times(h100, **pairs)
    assert causal_forward_tail(h100.sm_count, 8, 131072) * flops / (float(f) - h100.kernel_overhead_s) == \
        pytest.approx(h100.peak_flops_per_s * h100.flash_forward_efficiency, rel=1e-9)


def test_nvlink5_alltoall_runs_at_its_measured_efficiency():
    """An 8-GPU AllToAll on DGX B200 takes the all-to-all η (SimuMax: 0.5968 x 900 GiB/s = 0.641 x 900 GB/s)
    in its bandwidth term; its ring collectives keep η = 0.723; links without the field are unchanged."""
    from distcalc.cluster import load_cluster, load_link
    from distcalc.placement import effective_time_s, group_placement
    from distcalc.traffic import Comm, Dim

    link = load_link("nvlink5")
    assert link.alltoall_efficiency == pytest.approx(0.5968 * 900 * 2**30 / 900e9, abs=1e-3)
    assert load_link("nvlink4").alltoall_efficiency is None
    cluster = load_cluster("dgx-b200")
    placement = group_placement(cluster, Dim.EP, 8, 1)
    big = 2.0**30
    t_big, _ = effective_time_s(Comm.ALL_TO_ALL, big, placement)
    t_small, _ = effective_time_s(Comm.ALL_TO_ALL, big / 2, placement)
    # bandwidth term: (N - 1)/N of the message over η_a2a·B
    assert float(t_big - t_small) == pytest.approx((big / 2) * 7 / 8 / (link.alltoall_efficiency * 900e9), rel=0.01)
    ag_big, _ = effective_time_s(Comm.ALL_GATHER, big, placement)
    ag_small, _ = effective_time_s(Comm.ALL_GATHER, big / 2, placement)
    assert float(ag_big - ag_small) == pytest.approx((big / 2) * 7 / 8 / (link.efficiency * 900e9), rel=0.01)


def test_cli_cross_entropy_option_matches_the_library():
    """``distcalc analyze --cross-entropy te-fused`` gives the library's step with that loss; bad values exit 2."""
    import json

    from typer.testing import CliRunner

    from distcalc.cli import app

    args = ["analyze", "--model", "llama3-8b", "--cluster", "dgx-b200", "--gpus", "8", "--tp", "1", "--dp", "8",
            "--micro-batch", "1", "--global-batch", "32", "--seq-len", "4096", "--json"]
    steps = {}
    for kernel in CrossEntropyKernel:
        result = CliRunner().invoke(app, args + ["--cross-entropy", kernel.value])
        assert result.exit_code == 0, result.output
        steps[kernel] = json.loads(result.output)["step_time_s"]
    config = ParallelConfig(gpus=8, tp=1, dp=8, micro_batch=1, global_batch=32, seq_len=4096)
    lib = analyze("llama3-8b", "dgx-b200", config, AnalyzeOptions(cross_entropy="te-fused")).step_time_s
    assert steps[CrossEntropyKernel.TE_FUSED] == pytest.approx(lib, rel=1e-12)
    assert steps[CrossEntropyKernel.TE_FUSED] < steps[CrossEntropyKernel.NATIVE_FUSED] < steps[CrossEntropyKernel.UNFUSED]
    bad = CliRunner().invoke(app, args + ["--cross-entropy", "fused"])
    assert bad.exit_code == 2 and bad.output.strip().splitlines()[-1].startswith("error: invalid value for "
                                                                                "'--cross-entropy'")
