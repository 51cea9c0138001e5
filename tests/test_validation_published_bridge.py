"""Megatron-Bridge performance-summary rows: the recipe's bf16 gradients, and the 405B split as the recipe runs it."""

from __future__ import annotations

from distcalc.analyze import analyze
from distcalc.memory import Recipe
from distcalc.validation.published.bridge import (BRIDGE_GRADIENT_BYTES, bridge_analyze_updates, bridge_bf16_gradients,
                                                  bridge_memory_updates)
from distcalc.validation.published.mapping import run_inputs
from distcalc.validation.published.rows import published_runs

RUNS = {run.case_id: run for run in published_runs()}
BRIDGE_ROWS = [run for run in RUNS.values() if run.source.startswith("MegatronBridge_perf_summary")]


def test_every_bridge_row_and_only_those_reduce_bf16_gradients():
    assert len(BRIDGE_ROWS) == 28
    for run in RUNS.values():
        assert bridge_bf16_gradients(run) == (run in BRIDGE_ROWS), run.case_id
    for run in BRIDGE_ROWS:
        inputs = run_inputs(run)
        assert inputs.options.grad_reduce_bytes == BRIDGE_GRADIENT_BYTES == 2
        assert inputs.options.grad_buffer_zero_bytes_per_parameter == 2.0
        assert inputs.memory_options.recipe is Recipe.MIXED_16BIT_GRADS
    # other rows keep their own rules: NeMo 24.07 (bf16) and SimuMax's Megatron-LM runs reduce fp32 main_grad
    for run in RUNS.values():
        if run not in BRIDGE_ROWS:
            assert bridge_analyze_updates(run) == {} and bridge_memory_updates(run) == {}, run.case_id
    for source in ("NeMo_24.07", "SimuMax_B200"):
        options = run_inputs(next(r for r in RUNS.values() if r.source.startswith(source))).options
        assert options.grad_reduce_bytes == 4 and options.grad_buffer_zero_bytes_per_parameter == 4.0


def test_bf16_gradients_halve_the_dp_reduce_scatter_on_the_link():
    """H100 Llama 3 8B on 8 GPUs, Megatron-FSDP over all 8: the reduce-scatter carries 2 B per gradient instead of 4,
    the parameter all-gather stays 2 B, so the DP time on the link falls by a quarter (2+2 vs 4+2)."""
    inputs = run_inputs(RUNS["mbridge_25.09_h100_llama3_8b_8g_fp8cs_main"])
    bf16 = analyze(inputs.spec, inputs.cluster, inputs.config, inputs.options).time_breakdown["dp_on_link_s"]
    fp32_options = inputs.options.model_copy(
        update={"grad_reduce_bytes": 4, "grad_buffer_zero_bytes_per_parameter": 4.0})
    fp32 = analyze(inputs.spec, inputs.cluster, inputs.config, fp32_options).time_breakdown["dp_on_link_s"]
    assert 0.70 < bf16 / fp32 < 0.80


def test_the_405b_gb200_mxfp8_row_runs_the_b200_layout_with_two_layers_per_chunk():
    """25.09's recipe runs the GB200 MXFP8 405B row with the B200 row's layout (TP 4, PP 8, CP 2, VP 8) and the
    embedding and loss in the pipeline split: 126 + 2 slots over 64 chunks."""
    gb200 = run_inputs(RUNS["mbridge_25.09_gb200_llama3p1_405b_128g_fp8mx_alt"]).config
    b200 = run_inputs(RUNS["mbridge_25.09_b200_llama3p1_405b_128g_fp8mx_alt"]).config
    layout = ("tp", "pp", "cp", "dp", "vpp", "micro_batch", "global_batch", "dtype", "account_for_embedding_and_loss")
    assert {k: getattr(gb200, k) for k in layout} == {k: getattr(b200, k) for k in layout}
    assert gb200.account_for_embedding_and_loss and (126 + 2) % (gb200.pp * gb200.vpp) == 0
