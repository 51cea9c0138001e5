"""Megatron-DeepSpeed as BigScience ran it in February 2022 (the BLOOM sweep rows): which kernels and passes its
code runs that Megatron-LM's fused paths do not, and how the published-runs mapping prices them."""

from __future__ import annotations

import dataclasses

import pytest

from distcalc.analyze import ElementwiseKernels, analyze
from distcalc.validation.published.mapping import (AUTOGRAD_ACCUMULATION_BYTES, BF16_OPTIMIZER_ACCUMULATION_BYTES,
                                                   run_inputs)
from distcalc.validation.published.rows import published_runs

RUNS = {run.case_id: run for run in published_runs()}
BLOOM = "bloomsweep_h14336_l72_pp12_dp4_mbs1"


def test_zero1_rows_let_autograd_accumulate_16bit_gradients_and_run_local_linears():
    options = run_inputs(RUNS[BLOOM]).options
    assert AUTOGRAD_ACCUMULATION_BYTES == 6.0  # read param.grad and the new gradient (2 + 2), write 2
    assert options.grad_accumulation_bytes_per_parameter == AUTOGRAD_ACCUMULATION_BYTES
    assert options.elementwise_kernels is ElementwiseKernels.MEGATRON_LOCAL  # F.linear + bias kernels
    # the BF16_Optimizer takes each micro-batch's gradient itself (its own 10 B pass, not autograd's)
    bf16 = run_inputs(dataclasses.replace(RUNS[BLOOM], zero_stage=0)).options
    assert bf16.grad_accumulation_bytes_per_parameter == BF16_OPTIMIZER_ACCUMULATION_BYTES
    # Megatron-LM fuses the accumulation into the weight-gradient GEMM (main_grad): nothing extra
    megatron = run_inputs(RUNS["nara21_1p7b"]).options
    assert megatron.grad_accumulation_bytes_per_parameter == 0.0
    # local linears are Megatron-LM's without TransformerEngine (SC21 code included); a TE stack fuses them
    assert megatron.elementwise_kernels is ElementwiseKernels.MEGATRON_LOCAL
    assert run_inputs(RUNS["dgxc2503_llama3-8b_bf16_8g"]).options.elementwise_kernels is ElementwiseKernels.FUSED


def test_autograd_accumulation_costs_one_memory_bound_pass_per_micro_batch():
    i = run_inputs(RUNS[BLOOM])
    with_pass = analyze(i.spec, i.cluster, i.config, i.options)
    without = analyze(i.spec, i.cluster, i.config, i.options.model_copy(
        update={"grad_accumulation_bytes_per_parameter": 0.0}))
    extra = with_pass.step_time_s - without.step_time_s
    m = i.config.global_batch // (i.config.micro_batch * i.config.data_parallel)
    # the last stage holds 6 layers of 12 h^2 / t parameters (plus biases and norms) and the tied embedding V h / t
    h, t = 14336, 8
    params = 6 * 12 * h * h / t + 250880 * h / t
    per_pass = params * AUTOGRAD_ACCUMULATION_BYTES / 2.039e12  # A100 80GB datasheet HBM bandwidth
    assert m == 512 and m * per_pass < extra < 1.5 * m * per_pass


def test_megatron_dropout_defaults_make_the_bloom_rows_slower():
    i = run_inputs(RUNS[BLOOM])
    dry = i.spec.model_copy(update={"attention_dropout": 0.0, "hidden_dropout": 0.0, "embedding_dropout": 0.0})
    wet = analyze(i.spec, i.cluster, i.config, i.options).step_time_s
    assert wet > 1.005 * analyze(dry, i.cluster, i.config, i.options).step_time_s


def test_alibi_through_baddbmm_costs_a_copy_and_a_read_of_the_scores_without_flash_attention():
    from distcalc.compute.device import load_device
    from distcalc.compute.layer import ALIBI_SCORE_BYTES, layer_times
    from distcalc.model.dims import model_dims

    spec = run_inputs(RUNS[BLOOM]).spec
    assert spec.position_embedding.value == "alibi" and model_dims(spec).alibi
    plain = model_dims(spec.model_copy(update={"position_embedding": "none"}))
    alibi, device = model_dims(spec), load_device("a100-80gb", "bf16")
    b, s, t = 2, 2048, 8
    unfused = [layer_times(d, device, b, s, t, flash_attention=0) for d in (alibi, plain)]
    scores = b * (64 // t) * s * s
    extra = ALIBI_SCORE_BYTES * scores / device.memory_bandwidth_bytes_per_s + device.kernel_overhead_s
    assert float(unfused[0].forward_attention_s - unfused[1].forward_attention_s) == pytest.approx(extra)
    assert float(unfused[0].backward_s) == pytest.approx(float(unfused[1].backward_s))  # the bias has no gradient
    flash = [layer_times(d, device, b, s, t, flash_attention=1) for d in (alibi, plain)]
    assert float(flash[0].forward_s) == pytest.approx(float(flash[1].forward_s))  # a bias inside the kernel


def test_jean_zay_fabric_is_priced_at_the_rate_nccl_reached_in_bigscience_all_reduce_benchmark():
    from distcalc.cluster import load_link

    # all_reduce_bench-a100-n4.txt: 4 GB fp32 over 32 ranks, busbw 40.5 Gbps on a 2-channel ring through the
    # hfi1 ports (no GPUDirect RDMA): 20.3 Gbps per 100 Gb/s port
    link = load_link("omnipath-100g-nccl-jz")
    assert link.bandwidth_bytes_per_s == 12.5e9
    assert link.efficiency == pytest.approx(40.5 / 2 / 100, abs=0.001)
    cluster = run_inputs(RUNS[BLOOM]).cluster
    assert cluster.inter.name == "omnipath-100g-nccl-jz" and cluster.nics_per_node == 4


def test_bloom_main_training_held_out_from_the_rows_is_within_five_percent():
    """BLOOM-176B as trained (tr11 chronicles-prequel.md, 02-28: TP 4, PP 12, DP 8, MBS 2, 104.5 s/iteration
    printed; BF16_Optimizer; Megatron dropout defaults; no DP overlap in DeepSpeed's pipeline engine): not a
    development row, priced with the rules the rows use."""
    from distcalc.analyze import AnalyzeOptions
    from distcalc.model import load_model
    from distcalc.parallel import ParallelConfig, Recompute

    i = run_inputs(RUNS[BLOOM])
    spec = load_model("bloom-176b").model_copy(update={"attention_dropout": 0.1, "hidden_dropout": 0.1,
                                                        "embedding_dropout": 0.1})
    config = ParallelConfig(gpus=384, tp=4, pp=12, dp=8, zero=1, recompute=Recompute.FULL, micro_batch=2,
                            global_batch=2048, seq_len=2048, flash_attention=False,
                            account_for_embedding_and_loss=True)
    options = AnalyzeOptions(overlap_grad_reduce=False, overlap_param_gather=False, allreduce_sharded_gradients=True,
                             grad_accumulation_bytes_per_parameter=BF16_OPTIMIZER_ACCUMULATION_BYTES,
                             grad_reduce_bytes=4, elementwise_kernels=ElementwiseKernels.MEGATRON_LOCAL)
    step = analyze(spec, i.cluster, config, options).step_time_s
    assert abs(step / 104.5 - 1) < 0.05
