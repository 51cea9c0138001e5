"""Fused-attention implementations (cuDNN-class vs FlashAttention-2) and ring attention's kernel split."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, AttentionKernel, ContextParallelAlgorithm, analyze
from distcalc.cli import app
from distcalc.cluster import load_cluster
from distcalc.compute import load_device, model_dims
from distcalc.compute.attention import (RING_MERGE_BACKWARD_BYTES, RING_MERGE_FORWARD_BYTES, RING_MERGE_KERNELS,
                                        CpSplit, attention_kernel_device, flash_attention_times, ring_attention_times)
from distcalc.compute.layer import layer_times
from distcalc.errors import ConfigError
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig
from distcalc.validation.published import comparisons
from distcalc.validation.published.stack_kernels import attention_kernel
from distcalc.validation.published.rows import published_runs

H100 = load_device("h100-sxm")
H100_FA2 = attention_kernel_device(H100, AttentionKernel.FLASH2)
PEAK = H100.peak_flops_per_s


def test_flash2_on_h100_runs_at_the_published_flashattention2_rates():
    # FlashAttention-3 paper Fig. 5-6 (FA2, H100 SXM5, head dim 128, 16k): 335 causal / 370 full forward,
    # 322 backward TFLOP/s
    heads, s, d = 16, 16384, 128
    flops_causal = 0.5 * 4.0 * heads * s * s * d
    fwd, bwd = flash_attention_times(H100_FA2, heads, s, s, d, d, causal=True)
    assert flops_causal / (fwd - H100.kernel_overhead_s) == pytest.approx(335e12, rel=0.01)
    assert 2.5 * flops_causal / (bwd - H100.kernel_overhead_s) == pytest.approx(322e12, rel=0.01)
    fwd_full, _ = flash_attention_times(H100_FA2, heads, s, s, d, d, causal=False)
    assert 2 * flops_causal / (fwd_full - H100.kernel_overhead_s) == pytest.approx(370e12, rel=0.01)


def test_fused_default_is_unchanged_and_flash2_is_slower_on_hopper():
    assert attention_kernel_device(H100, AttentionKernel.FUSED) is H100
    for causal in (True, False):
        fused = flash_attention_times(H100, 32, 8192, 8192, 128, 128, causal)
        fa2 = flash_attention_times(H100_FA2, 32, 8192, 8192, 128, 128, causal)
        assert fa2[0] > 1.5 * fused[0] and fa2[1] > 1.3 * fused[1]


def test_flash2_reaches_the_fp8_devices_attention_twin():
    fp8 = load_device("h100-sxm", "fp8")
    twin = attention_kernel_device(fp8, AttentionKernel.FLASH2).attention
    assert twin is not None and twin.flash_forward_efficiency == H100_FA2.flash_forward_efficiency


def test_a100_flash2_is_its_preset_flash_rate():
    a100 = load_device("a100-80gb")
    fa2 = attention_kernel_device(a100, AttentionKernel.FLASH2)
    assert flash_attention_times(fa2, 8, 4096, 4096, 128, 128) == flash_attention_times(a100, 8, 4096, 4096, 128, 128)


def test_flash2_without_a_published_rate_is_refused_by_name():
    with pytest.raises(ConfigError, match=r"no published FlashAttention-2 rate for GPU 'b200'.*h100-sxm"):
        attention_kernel_device(load_device("b200"), AttentionKernel.FLASH2)


@settings(max_examples=40, deadline=None)
@given(cp=st.integers(1, 32), chunks=st.integers(1, 64), heads=st.integers(1, 64))
def test_ring_split_conserves_the_causal_work(cp, chunks, heads):
    # with equal causal / non-causal rates, no launch cost and free merges, the zig-zag ring's kernels
    # (1 causal + cp-1 half blocks) take exactly the time of one causal kernel over (s/cp) x s
    # sm_count 0: no thread-block tail (causal_forward_tail), which each kernel pays at its own block count
    free = replace(H100, kernel_overhead_s=0.0, memory_efficiency=1e30, sm_count=0)
    s = 2 * cp * 128 * chunks
    ring_f, ring_b = ring_attention_times(free, heads, s, cp, 128, 128, 0.0, 0.0)
    one_f, one_b = flash_attention_times(free, heads, s / cp, s, 128, 128, causal=True)
    assert ring_f == pytest.approx(one_f, rel=1e-12) and ring_b == pytest.approx(one_b, rel=1e-12)


def test_ring_merges_cost_their_counted_bytes_and_kernels():
    heads, s, cp, d = 8, 65536, 4, 128
    e_q, e_kv = heads * s / cp * d, 2 * s / cp * d
    f, b = ring_attention_times(H100, heads, s, cp, d, d, e_q, e_kv)
    f0, b0 = ring_attention_times(H100, heads, s, cp, d, d, 0.0, 0.0)
    bw = H100.memory_bandwidth_bytes_per_s
    assert f - f0 == pytest.approx((cp - 1) * (RING_MERGE_FORWARD_BYTES[0] * e_q + RING_MERGE_FORWARD_BYTES[1] * e_kv)
                                   / bw, rel=1e-9)
    assert b - b0 == pytest.approx((cp - 1) * (RING_MERGE_BACKWARD_BYTES[0] * e_q
                                               + RING_MERGE_BACKWARD_BYTES[1] * e_kv) / bw, rel=1e-9)
    assert RING_MERGE_KERNELS == (3, 4)


def test_ulysses_runs_one_causal_kernel_and_ring_runs_the_split():
    dims = model_dims(load_model("llama2-7b"))
    args = dict(micro_batch=1, seq_len=131072, tp=4, cp=4, sequence_parallel=1, flash_attention=1)
    ring = layer_times(dims, H100_FA2, **args, cp_split=CpSplit.RING)
    uly = layer_times(dims, H100_FA2, **args, cp_split=CpSplit.NONE)
    # FA2's off-diagonal blocks are non-causal (faster per FLOP) but the ring pays merges and launches
    assert ring.forward_attention_s != uly.forward_attention_s
    one_f, _ = flash_attention_times(H100_FA2, 8, 131072 / 4, 131072, 128, 128, causal=True)
    assert float(uly.forward_attention_s) == pytest.approx(float(one_f), rel=1e-12)


def test_analyze_option_changes_only_attention():
    spec = load_model("llama2-7b")
    cluster = load_cluster("dgx-h100")
    config = ParallelConfig(gpus=32, tp=2, cp=2, dp=8, micro_batch=1, global_batch=128, seq_len=32768,
                            sequence_parallel=True, flash_attention=True)
    fused = analyze(spec, cluster, config, AnalyzeOptions())
    fa2 = analyze(spec, cluster, config, AnalyzeOptions(attention_kernel=AttentionKernel.FLASH2))
    assert fa2.step_time_s > 1.15 * fused.step_time_s
    assert fa2.options["attention_kernel"] == "flash2" and fused.options["attention_kernel"] == "fused"
    uly = analyze(spec, cluster, config, AnalyzeOptions(cp_algorithm=ContextParallelAlgorithm.ULYSSES))
    assert np.isfinite(uly.step_time_s) and uly.step_time_s > 0


def test_nemo_releases_with_cudnn_attention_off_and_sdpa_rows_map_to_flash2():
    for run in published_runs():
        flash2 = ("NeMo 24.03" in run.framework or "NeMo 24.07" in run.framework
                  or "SDPA flash" in run.config_details)
        flash1 = "Megatron-LM @285068c8" in run.framework  # MegaScale's January 2023 baseline
        expected = AttentionKernel.FLASH2 if flash2 else AttentionKernel.FLASH1 if flash1 else AttentionKernel.FUSED
        assert attention_kernel(run) is expected, run.case_id


def test_a100_flash1_is_half_the_flashattention2_rate_inside_the_published_band():
    # Dao 2023 (FlashAttention-2) abstract: FlashAttention 1 reaches 25-40 % of A100 peak, FA2 is ~2x faster
    a100 = load_device("a100-80gb")
    fa1 = attention_kernel_device(a100, AttentionKernel.FLASH1)
    for eta1, eta2 in ((fa1.flash_forward_efficiency, a100.flash_forward_efficiency),
                       (fa1.flash_backward_efficiency, a100.flash_backward_efficiency)):
        assert eta1 == pytest.approx(eta2 / 2) and 0.25 <= eta1 <= 0.40
    fwd1, bwd1 = flash_attention_times(fa1, 16, 2048, 2048, 96, 96)
    fwd2, bwd2 = flash_attention_times(a100, 16, 2048, 2048, 96, 96)
    overhead = a100.kernel_overhead_s
    assert (fwd1 - overhead) == pytest.approx(2 * (fwd2 - overhead)) and (bwd1 - overhead) == pytest.approx(
        2 * (bwd2 - overhead))


def test_flash1_exists_only_on_ga100_parts_and_is_refused_elsewhere_by_name():
    with pytest.raises(ConfigError, match=r"attention kernel flash1: no published FlashAttention-1 rate for GPU "
                                          r"'h100-sxm'; valid: fused \(any GPU\), flash1 on a100-40gb, a100-80gb"):
        attention_kernel_device(H100, AttentionKernel.FLASH1)


def test_long_sequence_cp_rows_within_the_issue_targets():
    # NeMo long-sequence CP table (LLAMA2-7B, 4k-1024k tokens, H100): before this model -20.0 % signed
    errors = [c.predicted_step_s / c.measured_step_s - 1 for c in comparisons()
              if c.run.source == "NeMo_long_sequence_CP_LLAMA2-7B"]
    assert len(errors) == 9
    assert np.mean(np.abs(errors)) < 0.08 and abs(np.mean(errors)) < 0.05
    assert max(np.abs(errors)) < 0.12


def test_cli_refuses_flash2_on_a_gpu_without_a_rate():
    result = CliRunner().invoke(app, ["analyze", "--model", "llama2-7b", "--cluster", "dgx-b200", "--tp", "1",
                                      "--dp", "8", "--attention-kernel", "flash2"])
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1].startswith("error: attention kernel flash2")


def test_network_ring_slowdown_is_the_nccl_ctas_and_nic_stream_share():
    from distcalc.analyze.cp_ring import NET_P2P_CHANNELS, network_p2p_slowdown, ring_slowdown

    cluster = load_cluster("dgx-h100")
    kappa_net = network_p2p_slowdown(H100, cluster)
    expected = NET_P2P_CHANNELS / 132 + cluster.inter_bandwidth_per_gpu_bytes_per_s / H100.hbm_bandwidth_bytes_per_s
    assert kappa_net == pytest.approx(expected) and 0.02 < kappa_net < 0.04
    # CP 4 at stride 4 spans two 8-GPU nodes; CP 2 at stride 2 stays inside one
    kappas = ring_slowdown(np.array([4, 2]), np.array([4, 2]), H100, cluster, 0.189)
    assert kappas[0] == pytest.approx(kappa_net) and kappas[1] == 0.189


@settings(max_examples=40, deadline=None)
@given(ring_f=st.floats(0, 1), ring_b=st.floats(0, 2), attn=st.floats(0, 1), kappa=st.floats(0, 0.9),
       cp=st.integers(2, 64))
def test_ring_exposure_is_bounded_by_the_transfer(ring_f, ring_b, attn, kappa, cp):
    from distcalc.analyze.cp_ring import ring_exposed_s

    forward, both = ring_exposed_s(ring_f, ring_b, attn, kappa, cp)
    assert 0 <= forward <= ring_f + 1e-12 and forward <= both <= ring_f + ring_b + 1e-12


def test_ring_exposure_is_per_step():
    # cp steps of equal attention, cp-1 transfers: each transfer hides behind one step
    from distcalc.analyze.cp_ring import ring_exposed_s

    cp, step, transfer = 4, 1.0, 1.5
    forward, _ = ring_exposed_s((cp - 1) * transfer, 0.0, cp * step, 0.0, cp)
    assert forward == pytest.approx((cp - 1) * (transfer - step))


def test_analyze_reports_the_ring_slowdown_it_assumed():
    spec = load_model("llama2-7b")
    config = ParallelConfig(gpus=128, tp=4, cp=4, dp=8, micro_batch=1, global_batch=32, seq_len=131072,
                            sequence_parallel=True, flash_attention=True)
    report = analyze(spec, load_cluster("dgx-h100"), config, AnalyzeOptions())
    cp = next(o for o in report.overlaps if o["dim"] == "cp")
    assert "3.0 % slower" in cp["reason"]


def test_allgather_cp_messages_gather_the_whole_sequence_and_reduce_scatter_gradients():
    from distcalc.traffic import Comm, cp_layer_messages, nonzero

    b, s, kv, e, tp, cp = 1, 131072, 1024, 2, 2, 8
    msgs = nonzero(cp_layer_messages(b, s, kv, 8192, e, tp, cp, 0, 0, allgather=1))
    assert {m.collective for m in msgs} == {Comm.ALL_GATHER, Comm.REDUCE_SCATTER}
    assert all(float(m.size_bytes) == 2 * b * s * kv * e / tp and not m.overlappable for m in msgs)
    assert sum(float(m.count) for m in msgs if m.collective == Comm.ALL_GATHER) == 2  # forward + re-gather
    full = nonzero(cp_layer_messages(b, s, kv, 8192, e, tp, cp, 0, 2, allgather=1))
    assert sum(float(m.count) for m in full if m.collective == Comm.ALL_GATHER) == 3


@settings(max_examples=40, deadline=None)
@given(cp=st.integers(1, 32), chunks=st.integers(1, 64), heads=st.integers(1, 64))
def test_allgather_split_conserves_the_causal_work(cp, chunks, heads):
    from distcalc.compute.attention import allgather_attention_times

    # sm_count 0: no thread-block tail (causal_forward_tail), which each kernel pays at its own block count
    free = replace(H100, kernel_overhead_s=0.0, memory_efficiency=1e30, sm_count=0)
    s = 2 * cp * 128 * chunks
    ag_f, ag_b = allgather_attention_times(free, heads, s, cp, 128, 128)
    one_f, one_b = flash_attention_times(free, heads, s / cp, s, 128, 128, causal=True)
    assert ag_f == pytest.approx(one_f, rel=1e-12) and ag_b == pytest.approx(one_b, rel=1e-12)


def test_allgather_cp_is_exposed_and_reported():
    spec = load_model("llama2-7b")
    config = ParallelConfig(gpus=64, tp=4, cp=2, dp=8, micro_batch=1, global_batch=64, seq_len=65536,
                            sequence_parallel=True, flash_attention=True)
    options = AnalyzeOptions(cp_algorithm=ContextParallelAlgorithm.ALL_GATHER)
    report = analyze(spec, load_cluster("dgx-h100"), config, options)
    ring = analyze(spec, load_cluster("dgx-h100"), config, AnalyzeOptions())
    assert report.time_breakdown["cp_exposed_s"] > ring.time_breakdown["cp_exposed_s"]
    cp = next(o for o in report.overlaps if o["dim"] == "cp")
    assert cp["hidden_behind"] == "nothing (critical path)" and "all-gather" in cp["reason"]
    notes = {row["note"] for row in report.communication if row["dim"] == "cp"}
    assert {"all-gather K,V", "re-gather K,V", "reduce-scatter dK,dV"} <= notes


@settings(max_examples=40, deadline=None)
@given(heads=st.integers(1, 128), seq=st.integers(128, 32768), dim=st.sampled_from([64, 96, 128]),
       causal=st.booleans())
def test_flash1_is_never_faster_than_flash2_on_a100(heads, seq, dim, causal):
    a100 = load_device("a100-80gb")
    fa1 = attention_kernel_device(a100, AttentionKernel.FLASH1)
    fa2 = attention_kernel_device(a100, AttentionKernel.FLASH2)
    one = flash_attention_times(fa1, heads, seq, seq, dim, dim, causal)
    two = flash_attention_times(fa2, heads, seq, seq, dim, dim, causal)
    assert one[0] >= two[0] and one[1] >= two[1]
    assert all(np.isfinite(x) and x > 0 for x in one)
