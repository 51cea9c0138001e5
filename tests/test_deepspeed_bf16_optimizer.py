"""DeepSpeed's BF16_Optimizer (BLOOM's main training): all-reduced fp32 gradients, per-micro-batch fp32
accumulation, optimizer states partitioned over DP, and how a published Megatron-DeepSpeed bf16 ZeRO-0 row maps."""

from __future__ import annotations

import dataclasses

import pytest

from distcalc.analyze import AnalyzeOptions, analyze, evaluate_batch
from distcalc.memory import Recipe
from distcalc.parallel import ParallelConfig, Recompute
from distcalc.traffic import Comm, dp_gradient_messages
from distcalc.validation.published.mapping import BF16_OPTIMIZER_ACCUMULATION_BYTES, run_inputs
from distcalc.validation.published.rows import published_runs

RUNS = {run.case_id: run for run in published_runs()}


def _counts(zero, flag):
    msgs = dp_gradient_messages(1e9, 8, zero, 16, 4, 2, flag)
    return {m.collective: float(m.count) for m in msgs if float(m.count) > 0}


def test_allreduce_of_sharded_gradients_replaces_the_reduce_scatter_for_zero1_only():
    assert _counts(1, 0) == {Comm.REDUCE_SCATTER: 1.0, Comm.ALL_GATHER: 1.0}
    assert _counts(1, 1) == {Comm.ALL_REDUCE: 1.0, Comm.ALL_GATHER: 1.0}
    assert _counts(0, 1) == _counts(0, 0) == {Comm.ALL_REDUCE: 1.0}
    assert _counts(2, 1) == _counts(2, 0) and _counts(3, 1) == _counts(3, 0)


CONFIG = ParallelConfig(gpus=64, tp=8, pp=2, dp=4, zero=1, recompute=Recompute.FULL, micro_batch=1,
                        global_batch=64, seq_len=2048)


def _report(**options):
    o = AnalyzeOptions(overlap_grad_reduce=False, overlap_param_gather=False, **options)
    return analyze("gpt3-175b", "dgx-a100", CONFIG, o)


def test_bf16_optimizer_pays_the_allreduce_and_one_accumulation_pass_per_micro_batch():
    base = _report()
    allreduce = _report(allreduce_sharded_gradients=True)
    # an AllReduce moves about twice a ReduceScatter's bytes; the AllGather is unchanged
    assert allreduce.time_breakdown["dp_exposed_s"] > 1.5 * base.time_breakdown["dp_exposed_s"] - 1e-9
    acc = _report(grad_accumulation_bytes_per_parameter=BF16_OPTIMIZER_ACCUMULATION_BYTES)
    extra = acc.time_breakdown["optimizer_s"] - base.time_breakdown["optimizer_s"]
    batch = {k: getattr(CONFIG, k) for k in ("tp", "pp", "global_batch", "micro_batch", "seq_len")}
    out = evaluate_batch("gpt3-175b", "dgx-a100", {**batch, "dp": 4, "zero": 1, "recompute": 2}, memory=False)
    m, params = float(out["micro_batches"]), float(out["parameters_per_gpu"])
    per_pass = params * BF16_OPTIMIZER_ACCUMULATION_BYTES / 2.039e12  # A100 80GB HBM datasheet bandwidth
    # m passes, each at the device's achieved bandwidth (below the datasheet's, above half of it)
    assert m == 16 and m * per_pass < extra < 2 * m * per_pass
    assert acc.step_time_s - base.step_time_s == pytest.approx(extra)


def test_megatron_deepspeed_bf16_zero0_rows_map_to_the_bf16_optimizer():
    # BLOOM's main training: "ZERO_STAGE=0 # important: bf16 must use z0! it implements its own zero stage 1
    # equivalent" (tr11-176B-ml.slurm); a dev row re-stated that way
    row = dataclasses.replace(RUNS["bloomsweep_h14336_l72_pp12_dp4_mbs2"], zero_stage=0)
    inputs = run_inputs(row)
    assert inputs.config.zero_stage == 1  # its own ZeRO-1 equivalent: optimizer states over DP
    assert inputs.options.allreduce_sharded_gradients and inputs.options.grad_reduce_bytes == 4
    assert inputs.options.grad_accumulation_bytes_per_parameter == BF16_OPTIMIZER_ACCUMULATION_BYTES
    assert inputs.memory_options.recipe is Recipe.DEEPSPEED_BF16
    zero1 = run_inputs(RUNS["bloomsweep_h14336_l72_pp12_dp4_mbs2"])  # DeepSpeed ZeRO-1 optimizer, bf16 grads
    assert not zero1.options.allreduce_sharded_gradients and zero1.memory_options.recipe is Recipe.MIXED_16BIT_GRADS
    slower = analyze(inputs.spec, inputs.cluster, inputs.config, inputs.options).step_time_s
    assert slower > analyze(zero1.spec, zero1.cluster, zero1.config, zero1.options).step_time_s
