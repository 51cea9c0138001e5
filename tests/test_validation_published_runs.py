"""The published-runs harness: every row compared or listed with its reason, mapping rules, summaries."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

from distcalc.analyze import AttentionKernel, ElementwiseKernels, FsdpSharding
from distcalc.cli import app
from distcalc.memory import MemoryBasis, memory_report
from distcalc.parallel import ParallelConfig, Recompute
from distcalc.validation import CASE_SETS
from distcalc.validation.base import SkippedCase, ValidationCase
from distcalc.validation.published import comparisons
from distcalc.validation.published.mapping import NotExpressible, run_inputs
from distcalc.validation.published.rows import published_runs
from distcalc.validation.summary import OVERALL, group_summaries

RUNS = {run.case_id: run for run in published_runs()}


def test_every_row_is_compared_or_listed_with_a_reason():
    results = comparisons()
    assert len(results) == len(RUNS) == 198
    for c in results:
        assert (c.predicted_step_s is not None) != bool(c.reason), c.run.case_id
        if c.predicted_step_s is not None:
            assert c.predicted_step_s > 0 and c.measured_step_s > 0


def test_other_tool_prediction_is_read_from_the_notes():
    run = RUNS["simumax_b200_llama3_70b_l12_tp1_pp2_dp4_mbc4_cef"]
    assert run.other_tool_prediction == ("SimuMax", pytest.approx(0.82876), 66.44)


def test_zero_bubble_rows_keep_their_schedule_and_stage_split():
    inputs = run_inputs(RUNS["zb_T4_1p5B_8g_m24_b6_1f1b"])
    assert inputs.config.schedule.value == "1f1b"
    assert inputs.config.account_for_embedding_and_loss  # first and last stage hold one layer fewer
    assert inputs.config.micro_batch == 6 and inputs.config.global_batch == 144
    assert inputs.spec.tie_word_embeddings and inputs.spec.position_embedding.value == "learned"


def test_fsdp_rows_are_zero3_and_megatron_rows_use_the_distributed_optimizer():
    fsdp = run_inputs(RUNS["torchtitan_a100_fsdp2_8b_l3_64g_selectiveop"])
    assert fsdp.config.zero == 3 and not fsdp.config.distributed_optimizer
    assert fsdp.config.recompute is Recompute.SELECTIVE_OP  # "op-level selective AC": torchtitan's op SAC
    megatron = run_inputs(RUNS["nara21_1p7b"])
    assert megatron.config.zero == 0 and megatron.config.recompute is Recompute.FULL
    assert megatron.spec.norm_type.value == "layernorm" and megatron.spec.attention_qkv_bias


def test_uneven_layer_counts_take_the_embedding_and_loss_slots():
    run = RUNS["mbridge_25.11_gb200_llama3p1_405b_256g_fp8cs_main"]
    assert run.layers == 126 and run.pp * run.vpp == 64
    try:
        inputs = run_inputs(run)
    except NotExpressible as exc:  # only a missing preset may stop it, never the split
        assert "split" not in str(exc) and "divisible" not in str(exc)
    else:
        assert inputs.config.account_for_embedding_and_loss
        assert any("layer slot" in a for a in inputs.assumptions)


def test_not_expressible_reasons_are_one_line():
    skipped = CASE_SETS["published-runs"].skipped()
    assert all(s.reason and "\n" not in s.reason for s in skipped)
    assert len(skipped) + sum(c.unit == "s" for c in CASE_SETS["published-runs"].run()) == 198


def test_memory_bases_are_ordered_allocated_reserved_device():
    report = memory_report("llama3-8b", ParallelConfig(gpus=8, dp=8, seq_len=4096), "h100-sxm")
    stage = report.worst
    allocated, reserved, device = (stage.peak_bytes(b) for b in MemoryBasis)
    assert 0 < allocated < reserved < device == stage.total_bytes
    assert device - reserved == stage.communication_buffers_bytes + stage.cuda_context_bytes
    assert report.memory_dict()["allocated_bytes"] == allocated


def _case(group: str, predicted: float, published: float, other: float | None = None) -> ValidationCase:
    return ValidationCase(case=f"{group}-{predicted}", predicted=predicted, published=published, unit="s",
                          error_kind="relative", tolerance=0.08, group=group, other_tool="T" if other else "",
                          other_tool_predicted=other)


def test_group_summary_statistics():
    cases = [_case("a", 1.1, 1.0, other=0.95), _case("a", 0.8, 1.0), _case("b", 2.0, 2.0)]
    summaries = group_summaries(cases, [SkippedCase("x", "b", "no preset")], "s")
    a, b, overall = summaries
    assert (a.rows, a.runnable) == (2, 2) and (b.rows, b.runnable) == (2, 1)
    assert a.mean_abs_error == pytest.approx(0.15) and a.signed_mean_error == pytest.approx(-0.05)
    assert a.max_abs_error == pytest.approx(0.2)
    assert a.other_tool == "T" and a.other_tool_mean_abs_error == pytest.approx(0.05)
    assert a.ours_on_other_tool_rows == pytest.approx(0.1)
    assert overall.group == OVERALL and overall.rows == 4 and overall.runnable == 3
    assert overall.mean_abs_error == pytest.approx(0.1)


def test_cli_json_has_per_source_summaries_and_the_rows_not_compared():
    result = CliRunner().invoke(app, ["validate", "--set", "published-runs", "--json"])
    assert result.exit_code == 0, result.output
    entry = json.loads(result.stdout)["sets"][0]
    step = entry["summary"]["step_time"]
    assert step[-1]["group"] == OVERALL and step[-1]["rows"] == 198
    assert {s["group"] for s in step[:-1]} == {run.source for run in RUNS.values()}
    assert all(row["reason"] for row in entry["not_compared"])
    assert all(c["group"] for c in entry["cases"])


def test_a_row_with_blank_columns_is_listed_with_the_columns_it_lacks():
    from distcalc.validation.published.compare import compare
    from distcalc.validation.published.rows import parse_row

    raw = {"case_id": "x", "source": "held-out", "hidden": "", "layers": "32", "heads": "32", "ffn": "",
           "vocab": "32000", "seq_len": "4096", "gpus": "8", "global_batch": "64", "gpu": "a100-80gb"}
    comparison = compare(parse_row(raw))  # missing columns parse as None instead of raising
    assert comparison.predicted_step_s is None
    assert comparison.reason == "not stated: hidden, ffn"


def test_mixtral_style_moe_detail_reads_experts_and_top_k():
    from distcalc.model import ModelSpec
    from distcalc.validation.published.mapping import _moe_fields

    fields = _moe_fields("8 experts top-2", 14336)
    assert fields["num_local_experts"] == 8 and fields["num_experts_per_tok"] == 2
    spec = ModelSpec(name="mixtral", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                     num_key_value_heads=8, vocab_size=32000, **fields)
    assert spec.parameters == pytest.approx(46.70e9, rel=1e-3)  # Mixtral 8x7B's published 46.7B
    with pytest.raises(NotExpressible, match="moe_detail not understood"):
        _moe_fields("a mixture of experts", 14336)


def test_pytorch_native_rows_run_eager_elementwise_and_sdpa():
    """torchtitan (no compile, plain rmsnorm) and the IBM FSDP blog's fms-fsdp runs (before its torch.compile
    follow-up) price RMSNorm/SwiGLU/RoPE as eager ops and attention as SDPA's FlashAttention-2 (flash2); FSDP2 rows copy
    per parameter, FSDP1 rows concatenate their flat gradient; Megatron rows keep fused kernels. Both step
    PyTorch's foreach AdamW; fms-fsdp's 7B runs HSDP within the node (its README's benchmark table), its 70B
    FULL_SHARD."""
    ibm = run_inputs(RUNS["ibmfsdp_7b_h100_96g"]).options
    titan = run_inputs(RUNS["torchtitan_a100_fsdp2_13b_l2_64g_no"]).options
    megatron = run_inputs(RUNS["nara21_1p7b"]).options
    assert ibm.elementwise_kernels is titan.elementwise_kernels is ElementwiseKernels.EAGER
    assert megatron.elementwise_kernels is ElementwiseKernels.MEGATRON_LOCAL  # SC21 code: local linears
    assert ibm.attention_kernel is titan.attention_kernel is AttentionKernel.FLASH2
    assert megatron.attention_kernel is AttentionKernel.FUSED
    assert (titan.fsdp_sharding, ibm.fsdp_sharding) == (FsdpSharding.PER_PARAMETER, FsdpSharding.FLAT_PARAMETER)
    assert (ibm.fsdp_shard_size, titan.fsdp_shard_size) == (8, 0)
    assert run_inputs(RUNS["ibmfsdp_70b_h100_96g"]).options.fsdp_shard_size == 0
    assert run_inputs(RUNS["ibmfsdp_7b_a100_128g"]).memory_options.zero_shard_size == 8
    assert ibm.optimizer_bytes_per_parameter == titan.optimizer_bytes_per_parameter == 96.0
    # SC21's fp16 optimizer adds its loss-scaler unscale and gradient upcast and sets gradients to None
    # (analyze.optimizer_passes; was 38 / 4 before those passes were priced)
    assert megatron.optimizer_bytes_per_parameter == 38.0 + 14.0 and megatron.grad_buffer_zero_bytes_per_parameter == 0.0


def test_megatron_stacks_without_transformer_engine_run_megatron_local_linears():
    """The Zero Bubble fork requires ``--transformer-impl local``; Narayanan 2021 (SC21 code) and MegaScale's
    Megatron-LM 285068c8 baseline predate TransformerEngine in Megatron-LM, and Megatron-DeepSpeed (BLOOM)
    has no TransformerEngine: their rows price the unfused bias
    kernels. Megatron-Core / TransformerEngine / NeMo rows keep the fused default."""
    for run in RUNS.values():
        local = ("sail-sg zero-bubble" in run.framework or "Megatron-DeepSpeed" in run.framework or run.source in (
            "Narayanan2021_Table1", "MegaScale2024_Table2_MegatronLM_baseline"))
        if "torchtitan" in run.framework or "fms-fsdp" in run.framework:
            continue
        try:
            options = run_inputs(run).options
        except NotExpressible:
            continue
        expected = ElementwiseKernels.MEGATRON_LOCAL if local else ElementwiseKernels.FUSED
        assert options.elementwise_kernels is expected, run.case_id


def test_fp16_megatron_rows_reduce_gradients_in_fp16_and_bf16_rows_in_fp32():
    """Megatron-LM's local DDP keeps gradients in the parameter dtype unless
    --accumulate-allreduce-grads-in-fp32, which only bf16 forces; the SC21 fp16 scripts do not pass it (and
    PyTorch DDP reduces param.grad): 2 bytes. MegaScale's bf16 baseline reduces fp32 main_grad buffers."""
    assert run_inputs(RUNS["nara21_1p7b"]).options.grad_reduce_bytes == 2
    assert run_inputs(RUNS["nara21_1008b"]).options.grad_reduce_bytes == 2
    assert run_inputs(RUNS["megascale_mlm_256g_b768"]).options.grad_reduce_bytes == 4


def test_the_out_of_memory_row_says_whether_distcalc_agrees():
    # FlagPerf's A800 ablation PP1 DP8 TP1 ran out of memory; distcalc's nvidia-smi-basis peak must exceed 80 GiB
    oom = next(c for c in comparisons() if c.run.case_id == "flagperf_l3_8b_a800_pp1dp8tp1_oom")
    assert oom.predicted_step_s is None
    assert "agrees it cannot fit" in oom.reason and "on the 80 GiB device" in oom.reason
    others = [c for c in comparisons() if c.predicted_step_s is None and c.run.case_id != oom.run.case_id]
    assert all("cannot fit" not in c.reason for c in others)


def test_zero_bubble_printed_gb_is_read_as_decimal_bytes():
    from distcalc.validation.published.compare import DECIMAL_GB_SOURCES, measured_memory_gib

    zb = RUNS["zb_T4_1p5B_8g_m24_b6_1f1b"]
    assert zb.source in DECIMAL_GB_SOURCES
    assert measured_memory_gib(zb) == pytest.approx(30 * 1e9 / 2**30)
    simumax = RUNS["simumax_b200_llama3_70b_l12_tp1_pp2_dp4_mbc4_cef"]  # printed in GiB: kept as printed
    assert measured_memory_gib(simumax) == simumax.measured_peak_memory_gib
    compared = next(c for c in comparisons() if c.run.case_id == zb.case_id)
    assert compared.measured_memory_gib == pytest.approx(30 * 1e9 / 2**30)
    case = next(c for c in CASE_SETS["published-runs"].run()
                if c.case == f"{zb.case_id} peak memory (allocated)")
    assert "10^9" in case.note


#: Qi et al. 2024 (ICLR version) Tables 8 and 9: 1F1B runs of the Table 4 models at other micro-batch counts m
#: and sizes b, with the printed "Memory (GB)": (Table 4 row the model comes from, m, b, printed GB)
ZERO_BUBBLE_1F1B_SWEEP = (
    ("zb_T4_1p5B_8g_m24_b6_1f1b", 2, 6, 11), ("zb_T4_1p5B_8g_m24_b6_1f1b", 4, 6, 18),
    ("zb_T4_1p5B_8g_m24_b6_1f1b", 8, 6, 29), ("zb_T4_1p5B_8g_m24_b6_1f1b", 24, 12, 57),
    ("zb_T4_6p2B_8g_m24_b3_1f1b", 2, 3, 21), ("zb_T4_6p2B_8g_m24_b3_1f1b", 4, 3, 28),
    ("zb_T4_6p2B_8g_m24_b3_1f1b", 8, 3, 39), ("zb_T4_6p2B_8g_m24_b3_1f1b", 24, 6, 66),
    ("zb_T4_14p6B_16g_m48_b1_1f1b", 4, 1, 19), ("zb_T4_14p6B_16g_m48_b1_1f1b", 8, 1, 24),
    ("zb_T4_14p6B_16g_m48_b1_1f1b", 16, 1, 32), ("zb_T4_14p6B_16g_m48_b1_1f1b", 48, 2, 50),
    ("zb_T4_28p3B_32g_m96_b1_1f1b", 96, 2, 72),
)


def test_zero_bubble_memory_sweep_agrees_in_decimal_gb_not_in_gib():
    # the printed memories of 13 further 1F1B runs (11-72 GB: model states dominate at small m, activations at
    # large m) against distcalc's allocated peak: read as 10^9 B they scatter around zero within the rounding of
    # an integer print; read as GiB they are all above the model by about 1 - 10^9/2^30 = 6.9 %

    from distcalc.units import GIB

    decimal, binary = [], []
    for case_id, m, b, printed in ZERO_BUBBLE_1F1B_SWEEP:
        run = dataclasses.replace(RUNS[case_id], micro_batch=b, global_batch=m * b)
        inputs = run_inputs(run)
        report = memory_report(inputs.spec, inputs.config, inputs.cluster.gpu, inputs.memory_options)
        predicted = max(stage.peak_bytes(MemoryBasis.ALLOCATED) for stage in report.stages)
        decimal.append(predicted / (printed * 1e9) - 1)
        binary.append(predicted / (printed * GIB) - 1)
    assert max(abs(e) for e in decimal) < 0.05
    assert abs(sum(decimal) / len(decimal)) < 0.02
    assert max(binary) < -0.02 and sum(binary) / len(binary) < -0.05


def test_context_parallel_algorithm_follows_the_stack():
    """torchtitan's CP is PyTorch's ring attention with its default AllGather rotater (torch-allgather), or the
    alltoall rotater where a row names it; Megatron's ``--cp-comm-type a2a`` is Ulysses; TransformerEngine's CP
    (NeMo) the Send/Recv ring. The rows with CP > 1 keep their stack's algorithm in analyze and memory alike."""
    from distcalc.software import ContextParallelAlgorithm as Cp
    from distcalc.validation.published.pytorch_stacks import cp_algorithm

    titan = RUNS["torchtitan_a100_fsdp2_13b_l2_64g_no"]
    assert cp_algorithm(titan) is Cp.TORCH_ALLGATHER
    named = dataclasses.replace(titan, config_details=titan.config_details + "; CP rotate method alltoall")
    assert cp_algorithm(named) is Cp.TORCH_ALLTOALL
    assert cp_algorithm(dataclasses.replace(titan, framework="NeMo 24.07")) is Cp.RING
    assert cp_algorithm(dataclasses.replace(titan, framework="NeMo 24.07", config_details="CP comm type a2a")) \
        is Cp.ULYSSES
    for run in published_runs():
        if run.cp > 1:
            inputs = run_inputs(run)
            assert inputs.options.cp_algorithm is inputs.memory_options.cp_algorithm is cp_algorithm(run)
