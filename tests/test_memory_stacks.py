"""What a software stack adds to memory (distcalc.memory.stacks) and how the published rows use it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from distcalc.memory import (MemoryBasis, MemoryOptions, Recipe, bytes_per_parameter, memory_report,
                            stack_memory_options)
from distcalc.memory.stacks import (
    EAGER_CUDA_CONTEXT_BYTES,
    RECOMPUTE_FRAGMENTATION,
    cuda_context_bytes,
    reserve_fraction_of_fragmentation,
    zero_optimizer_recipe,
)
from distcalc.parallel import ParallelConfig, Recompute
from distcalc.units import MIB
from distcalc.validation.published import comparisons
from distcalc.validation.published.mapping import run_inputs
from distcalc.validation.published.rows import published_runs

RUNS = {run.case_id: run for run in published_runs()}
BLOOM = "bloomsweep_h14336_l72_pp12_dp4_mbs1"


def test_eager_context_is_bigscience_measurement_and_lazy_keeps_the_default():
    assert EAGER_CUDA_CONTEXT_BYTES == 1573 * MIB
    assert cuda_context_bytes((11, 5)) == EAGER_CUDA_CONTEXT_BYTES
    assert cuda_context_bytes((11, 7)) == MemoryOptions().cuda_context_bytes  # lazy loading from CUDA 11.7
    assert cuda_context_bytes((12, 4), default=123) == 123
    assert cuda_context_bytes(None) == MemoryOptions().cuda_context_bytes


def test_fragmentation_of_reserved_is_converted_to_a_fraction_of_the_rest():
    # GMLake: 15 % of the reserved pool unusable -> the reserve is 0.15 / 0.85 of everything else
    assert reserve_fraction_of_fragmentation(RECOMPUTE_FRAGMENTATION) == pytest.approx(0.15 / 0.85)
    assert reserve_fraction_of_fragmentation(0.0) == 0.0
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError, match="fragmentation"):
            reserve_fraction_of_fragmentation(bad)


@given(st.floats(min_value=0.0, max_value=0.95))
def test_reserve_reproduces_the_fragmentation_ratio(f):
    allocated = 1.0
    reserved = allocated * (1.0 + reserve_fraction_of_fragmentation(f))
    assert (reserved - allocated) / reserved == pytest.approx(f, abs=1e-12)


def test_deepspeed_zero_keeps_16bit_gradients_and_its_bf16_optimizer_adds_fp32_ones():
    assert zero_optimizer_recipe(True) is Recipe.MIXED_16BIT_GRADS
    assert zero_optimizer_recipe(True, fp32_grad_accumulation=True) is Recipe.DEEPSPEED_BF16
    assert zero_optimizer_recipe(False) is Recipe.MIXED
    assert [bytes_per_parameter(r)["total"] for r in Recipe] == [18.0, 16.0, 20.0]


def test_stack_options_leave_other_fields_and_the_plain_stack_unchanged():
    assert stack_memory_options() == MemoryOptions()
    base = MemoryOptions(comm_buffer_bytes=7 * MIB)
    opts = stack_memory_options(deepspeed_zero=True, cuda_version=(11, 5), irregular_allocations=True, base=base)
    assert opts.comm_buffer_bytes == 7 * MIB
    assert opts.recipe is Recipe.MIXED_16BIT_GRADS and opts.cuda_context_bytes == EAGER_CUDA_CONTEXT_BYTES
    assert opts.allocator_reserve_fraction == pytest.approx(0.15 / 0.85)
    assert (opts.step_buffer_bytes_per_parameter, opts.step_bucket_bytes) == (6.0, 500_000_000 * 2)
    bf16 = stack_memory_options(deepspeed_zero=True, fp32_grad_accumulation=True)  # BF16_Optimizer: its own step
    assert (bf16.step_buffer_bytes_per_parameter, bf16.step_bucket_bytes) == (0.0, 0)


def test_deepspeed_stack_halves_gradient_bytes_and_adds_the_eager_context():
    config = ParallelConfig(gpus=64, tp=8, pp=2, dp=4, zero=1, recompute=Recompute.FULL, micro_batch=1,
                            global_batch=64, seq_len=2048)
    megatron = memory_report("llama2-7b", config)
    deepspeed = memory_report("llama2-7b", config, options=stack_memory_options(
        deepspeed_zero=True, cuda_version=(11, 5), irregular_allocations=True))
    a, b = megatron.worst, deepspeed.worst
    assert b.gradients_bytes == pytest.approx(a.gradients_bytes / 2)
    assert b.weights_bytes == a.weights_bytes and b.optimizer_bytes == a.optimizer_bytes
    assert b.cuda_context_bytes == EAGER_CUDA_CONTEXT_BYTES
    # the ZeRO-1 step's flat 16-bit + fp32 gradient copies (6 B per optimizer-shard parameter, dp 4) and the
    # 5e8-element 16-bit reduce bucket: new segments, outside the fragmentation reserve
    assert b.optimizer_step_buffers_bytes == pytest.approx(6.0 * b.parameters / 4 + 1e9)
    assert a.optimizer_step_buffers_bytes == 0.0
    rest = b.total_bytes - b.allocator_reserve_bytes - b.optimizer_step_buffers_bytes
    assert b.allocator_reserve_bytes == pytest.approx(0.15 / 0.85 * rest)
    # the reserve counts on the reserved and device bases only; allocated is the steady state or the model
    # states with the step's tensors, whichever is more
    states = b.weights_bytes + b.gradients_bytes + b.optimizer_bytes
    assert b.peak_bytes(MemoryBasis.ALLOCATED) == pytest.approx(
        max(states + b.activations_bytes, states + b.optimizer_step_buffers_bytes))
    assert b.peak_bytes(MemoryBasis.RESERVED) == pytest.approx(
        b.total_bytes - b.communication_buffers_bytes - b.cuda_context_bytes)


def test_bloom_rows_describe_megatron_deepspeed_and_flagperf_rows_megatron_core():
    bloom = run_inputs(RUNS[BLOOM])
    assert bloom.memory_options.recipe is Recipe.MIXED_16BIT_GRADS
    assert bloom.memory_options.cuda_context_bytes == EAGER_CUDA_CONTEXT_BYTES
    assert bloom.memory_options.allocator_reserve_fraction == pytest.approx(0.15 / 0.85)  # full recompute
    assert bloom.options.grad_reduce_bytes == 2  # DeepSpeed reduces the 16-bit param.grad
    flagperf = run_inputs(RUNS["flagperf_l3_8b_h100_pp1dp4tp2"])  # Megatron-Core 0.6, CUDA 12, no recompute
    # DGX H100 (NVLS), TP 2, DP 4 in one node: world 688 + 8 x 192, TP 544, DP and Megatron-Core's loss-averaging
    # DP group 688 + 4 x 192 each (distcalc.memory.nccl_buffers)
    nccl = (688 + 8 * 192 + 544 + 2 * (688 + 4 * 192)) * MIB
    assert flagperf.memory_options == MemoryOptions(comm_buffer_bytes=nccl)
    assert flagperf.options.grad_reduce_bytes == 4


def test_published_comparison_uses_the_rows_memory_options():
    row = next(c for c in comparisons() if c.run.case_id == BLOOM)
    i = row.inputs
    expected = memory_report(i.spec, i.config, i.cluster.gpu, i.memory_options)
    assert row.predicted_memory_gib * 2**30 == pytest.approx(max(s.total_bytes for s in expected.stages))


def test_bloom_preset_has_the_published_parameter_count_less_its_embedding_layernorm():
    from distcalc.model import load_model

    # huggingface.co/bigscience/bloom: 176,247,271,424 parameters; the preset leaves out the word-embedding
    # LayerNorm (weight and bias, 2 x 14336), which the model spec does not represent
    assert load_model("bloom-176b").parameters == 176_247_271_424 - 2 * 14336


def test_bloom_as_bigscience_ran_it_is_within_a_sixth_of_the_printed_59_gb():
    # tr11 chronicles-prequel.md, 02-28: 176B, TP 4, PP 12, DP 8, MBS 2 -> 59GB on nvidia-smi (first node)
    config = ParallelConfig(gpus=384, tp=4, pp=12, dp=8, zero=1, recompute=Recompute.FULL, micro_batch=2,
                            global_batch=2048, seq_len=2048, flash_attention=False,
                            account_for_embedding_and_loss=True)
    stack = stack_memory_options(deepspeed_zero=True, fp32_grad_accumulation=True, cuda_version=(11, 5),
                                 irregular_allocations=True)
    device = memory_report("bloom-176b", config, "a100-80gb", stack).total_bytes / 2**30
    plain = memory_report("bloom-176b", config, "a100-80gb").total_bytes / 2**30
    assert device == pytest.approx(52.86, abs=0.01)
    assert abs(device / 59 - 1) < 0.15 < abs(plain / 59 - 1)


def test_flagperf_rows_keep_megatrons_default_dropout_like_its_other_defaults():
    # pretrain_llama3.sh passes no --hidden-dropout / --attention-dropout: Megatron's 0.1 defaults run
    spec = run_inputs(RUNS["flagperf_l3_8b_a800_pp2dp4tp1"]).spec
    assert spec.hidden_dropout == 0.1 and spec.attention_dropout == 0.1 and spec.mlp_bias
    assert spec.embedding_dropout == 0.1  # Megatron's embedding dropout is the hidden dropout
    # BigScience's tr11 README: "The default Megatron-LM dropout settings are inherited" (the slurm script passes
    # no dropout flag), although the BLOOM rows' dropout column says false
    bloom = run_inputs(RUNS[BLOOM])
    assert bloom.spec.hidden_dropout == bloom.spec.attention_dropout == bloom.spec.embedding_dropout == 0.1
    assert any("dropout" in a for a in bloom.assumptions)
    titan = run_inputs(RUNS["torchtitan_a100_fsdp2_13b_l2_64g_no"]).spec  # no dropout, no such statement
    assert titan.hidden_dropout == titan.embedding_dropout == 0.0


def test_cli_takes_the_stack_numbers_as_options():
    import json

    from typer.testing import CliRunner

    from distcalc.cli import app

    args = ["memory", "--model", "bloom-176b", "--gpu", "a100-80gb", "--gpus", "384", "--tp", "4", "--pp", "12",
            "--dp", "8", "--micro-batch", "2", "--global-batch", "2048", "--seq-len", "2048", "--recompute", "full",
            "--zero", "1", "--no-flash-attention", "--account-for-embedding-and-loss", "--recipe", "deepspeed-bf16",
            "--cuda-context", "1573MiB", "--allocator-reserve", "0.1765", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    memory = json.loads(result.stdout)["memory"]
    assert memory["bytes_per_parameter"]["gradients"] == 6 and memory["bytes_per_parameter"]["total"] == 20
    assert memory["cuda_context_bytes"] == EAGER_CUDA_CONTEXT_BYTES
    assert memory["total_bytes"] / 2**30 == pytest.approx(52.86, abs=0.01)


def test_cli_takes_the_optimizer_step_buffers_and_shows_their_line_only_when_set():
    import json

    from typer.testing import CliRunner

    from distcalc.cli import app

    args = ["memory", "--model", "bloom-176b", "--gpu", "a100-80gb", "--gpus", "384", "--tp", "8", "--pp", "12",
            "--dp", "4", "--micro-batch", "2", "--global-batch", "2048", "--seq-len", "2048", "--recompute", "full",
            "--zero", "1", "--no-flash-attention", "--account-for-embedding-and-loss", "--recipe",
            "mixed-16bit-grads"]
    step = ["--step-buffer", "6", "--step-bucket", "1e9"]
    plain, with_step = (CliRunner().invoke(app, args + extra + ["--json"]) for extra in ([], step))
    assert plain.exit_code == with_step.exit_code == 0, with_step.output
    a, b = (json.loads(r.stdout)["memory"]["stages"][0] for r in (plain, with_step))
    # stage 0: 5 layers of 12 h^2 / t (+ biases, norms) and the V h / t embedding, optimizer sharded over dp 4
    assert b["optimizer_step_buffers_bytes"] == pytest.approx(6 * b["parameters"] / 4 + 1e9)
    assert b["total_bytes"] - a["total_bytes"] == pytest.approx(b["optimizer_step_buffers_bytes"])
    assert a["optimizer_step_buffers_bytes"] == 0.0
    tables = [CliRunner().invoke(app, args + extra).stdout for extra in ([], step)]
    assert "optimizer-step buffers" not in tables[0] and "optimizer-step buffers" in tables[1]
    bad = CliRunner().invoke(app, args + ["--step-bucket", "12x"])
    assert bad.exit_code == 2 and "--step-bucket" in bad.output
