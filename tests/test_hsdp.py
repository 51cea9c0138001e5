"""HSDP (distcalc.analyze.hsdp), FSDP1's flat-gradient concatenation, PyTorch's foreach AdamW bytes and the
FSDP line of the overlaps report."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, FsdpSharding, analyze
from distcalc.analyze.comm import GroupKey
from distcalc.analyze.fsdp import fsdp_exposure, fsdp_flat_grad_copy_s
from distcalc.analyze.hsdp import hsdp_groups
from distcalc.analyze.options import TORCH_FOREACH_ADAMW_BYTES_PER_PARAMETER
from distcalc.analyze.report import _dims
from distcalc.cli import app
from distcalc.compute import load_device
from distcalc.errors import ConfigError
from distcalc.memory import MemoryOptions, memory_report
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig

times = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
# Llama 2 7B, FSDP over 4 nodes of 8 A100 (batch 2 x 4096 per GPU, as IBM's fms-fsdp runs)
CONFIG = ParallelConfig(gpus=32, dp=32, zero=3, micro_batch=2, global_batch=64, seq_len=4096)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 96), times, times, times, times, times, times)
def test_without_allreduce_the_exposure_is_unchanged(units, f, b, g, r, g0, r0):
    """a = a0 = 0 (no HSDP) reproduces the FULL_SHARD formulas exactly."""
    base = fsdp_exposure(units, f, b, g, r, g0, r0)
    zero = fsdp_exposure(units, f, b, g, r, g0, r0, allreduce_s=0.0, root_allreduce_s=0.0)
    assert base == zero


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 96), times, times, times, times, times, times, times, times)
def test_allreduce_never_shortens_the_exposure(units, f, b, g, r, g0, r0, a, a0):
    """The replicate AllReduce runs beside the shard group's collectives: it hides where they or the block's
    backward outlast it, and the last ones wait for it."""
    plain = fsdp_exposure(units, f, b, g, r, g0, r0)
    hsdp = fsdp_exposure(units, f, b, g, r, g0, r0, allreduce_s=a, root_allreduce_s=a0)
    assert hsdp.backward_exposed_s >= plain.backward_exposed_s - 1e-12
    assert hsdp.forward_exposed_s == plain.forward_exposed_s
    # the end: last ReduceScatter, then its AllReduce beside the root's ReduceScatter, then the root's AllReduce
    steps = units - 1
    assert hsdp.backward_exposed_s == pytest.approx(
        steps * max(max(g + r, a) - b, 0.0) + r + max(a, r0) + a0)


def test_shard_and_replicate_groups():
    """k consecutive DP ranks shard; one rank of each shard group replicates (stride k × the DP stride)."""
    shard, replicate = hsdp_groups(GroupKey(np.array([128]), np.array([2])), 8)
    assert (int(shard.size[0]), int(shard.stride[0])) == (8, 2)
    assert (int(replicate.size[0]), int(replicate.stride[0])) == (16, 16)
    with pytest.raises(ConfigError, match=r"fsdp_shard_size\(3\) must divide the data-parallel group dp·cp\(128\)"):
        hsdp_groups(GroupKey(np.array([128]), np.array([1])), 3)


def test_shard_size_of_the_whole_group_is_full_shard():
    """k = dp: the replicate group is one rank, so HSDP is FULL_SHARD to the last bit of the step."""
    full = analyze("llama2-7b", "dgx-a100", CONFIG)
    same = analyze("llama2-7b", "dgx-a100", CONFIG, AnalyzeOptions(fsdp_shard_size=32))
    assert same.step_time_s == full.step_time_s
    assert same.time_breakdown == full.time_breakdown


def test_hsdp_within_the_node_trades_collectives_for_a_bigger_optimizer_step():
    """Sharding within the node: per-unit gathers run on NVLink (faster than the 4-node ring), the step
    updates 1/8 of the model instead of 1/32, and the memory holds 4x the sharded states."""
    full = analyze("llama2-7b", "dgx-a100", CONFIG)
    hsdp = analyze("llama2-7b", "dgx-a100", CONFIG, AnalyzeOptions(fsdp_shard_size=8))
    assert hsdp.time_breakdown["optimizer_s"] > 3.5 * full.time_breakdown["optimizer_s"]
    gather = lambda r: next(m for m in r.communication if "forward" in m["note"] and m["collective"] == "all-gather")  # noqa: E731
    assert gather(hsdp)["time_s"] < gather(full)["time_s"]
    assert "HSDP: shard group of 8" in gather(hsdp)["note"]
    spec = load_model("llama2-7b")
    mem_full = memory_report(spec, CONFIG, "a100-80gb")
    mem_hsdp = memory_report(spec, CONFIG, "a100-80gb", MemoryOptions(zero_shard_size=8))
    assert mem_hsdp.sharding["optimizer_divisor"] == 8 and mem_full.sharding["optimizer_divisor"] == 32
    assert mem_hsdp.stages[0].optimizer_bytes == pytest.approx(4 * mem_full.stages[0].optimizer_bytes, rel=1e-9)


def test_flat_parameter_adds_the_gradient_concatenation():
    """FSDP1's flat parameter: the step grows by exactly the concatenation's copy (read + write of every unit's
    bf16 gradient, one kernel per unit), paced by the slowest GPU; Megatron-FSDP's flat buffers copy nothing."""
    flat = analyze("llama2-7b", "dgx-a100", CONFIG, AnalyzeOptions(fsdp_sharding=FsdpSharding.FLAT))
    fsdp1 = analyze("llama2-7b", "dgx-a100", CONFIG, AnalyzeOptions(fsdp_sharding=FsdpSharding.FLAT_PARAMETER))
    d, device = _dims(load_model("llama2-7b")), load_device("a100-80gb", "bf16")
    copy = fsdp_flat_grad_copy_s(d.layers, d.parameters_per_layer, d.embedding_parameters + d.lm_head_parameters,
                                 2, device.memory_bandwidth_bytes_per_s, device.kernel_overhead_s)
    extra = fsdp1.step_time_s - flat.step_time_s
    assert extra == pytest.approx(fsdp1.gpu_variability["slowest_gpu_factor"] * float(copy), rel=1e-9)
    # 6.7e9 parameters x 4 B at the achievable HBM bandwidth of an A100: ~18 ms
    assert 0.012 < extra < 0.025


def test_pytorch_adamw_bytes_price_the_optimizer_step():
    """torch.optim.AdamW (foreach) + clip_grad_norm_: 96 B per parameter and no zeroing, against Megatron's
    38 + 4; the optimizer step scales with those bytes."""
    megatron = analyze("llama2-7b", "dgx-a100", CONFIG, AnalyzeOptions(fsdp_shard_size=8))
    torch_adamw = analyze("llama2-7b", "dgx-a100", CONFIG, AnalyzeOptions(
        fsdp_shard_size=8, optimizer_bytes_per_parameter=TORCH_FOREACH_ADAMW_BYTES_PER_PARAMETER,
        grad_buffer_zero_bytes_per_parameter=0.0))
    ratio = torch_adamw.time_breakdown["optimizer_s"] / megatron.time_breakdown["optimizer_s"]
    assert ratio == pytest.approx(96 / 42, rel=0.02)  # less the 20 kernel launches both pay


def test_overlaps_state_the_per_block_windows_and_hsdp():
    """The FSDP overlap line names the prefetch policy, the HSDP groups and each block's windows."""
    report = analyze("llama2-7b", "dgx-a100", CONFIG, AnalyzeOptions(fsdp_shard_size=8))
    dp = next(o for o in report.overlaps if o["dim"] == "dp")
    assert "BACKWARD_PRE" in dp["hidden_behind"] and "replicate AllReduce" in dp["hidden_behind"]
    assert "shard groups of 8 ranks" in dp["collectives"]
    assert "per block: AllGather" in dp["reason"] and "vs forward" in dp["reason"] and "HSDP AllReduce" in dp["reason"]


def test_cli_fsdp_shard_size_must_divide_dp():
    """Bad input: exit 2 and one line naming the value and what is valid."""
    result = CliRunner().invoke(app, ["analyze", "--model", "llama2-7b", "--cluster", "dgx-a100", "--gpus", "16",
                                      "--zero", "3", "--fsdp-shard-size", "3", "--micro-batch", "2",
                                      "--global-batch", "32"])
    assert result.exit_code == 2
    assert "error: fsdp_shard_size(3) must divide the data-parallel group dp·cp(16)" in result.output


def test_memory_cli_shards_over_the_hsdp_group():
    """`distcalc memory --fsdp-shard-size 8`: the states divide by 8, not by dp; a non-divisor exits 2."""
    args = ["memory", "--model", "llama2-7b", "--gpus", "128", "--zero", "3", "--micro-batch", "2",
            "--seq-len", "4096", "--global-batch", "256"]
    runner = CliRunner()
    result = runner.invoke(app, args + ["--fsdp-shard-size", "8"])
    assert result.exit_code == 0 and "weights 2 B/param / 8, gradients 4 / 8, optimizer 12 / 8" in result.output
    bad = runner.invoke(app, args + ["--fsdp-shard-size", "3"])
    assert bad.exit_code == 2
    assert "error: fsdp_shard_size(3) must divide the data-parallel group dp·cp(128)" in bad.output


def test_pytorch_native_layer_code():
    """torchtitan / fms Llama code: separate q/k/v and gate/up linears carry exactly the fused GEMMs' FLOPs,
    autograd adds the three extra input gradients, GQA copies keys and values (MHA does not), and the weight
    gradient is written in 16 bit (cheaper than Megatron's fp32 accumulation)."""
    from dataclasses import replace
    from distcalc.compute import layer_times
    from distcalc.compute.device import elementwise_time_s
    from distcalc.compute.pytorch_layer import GRAD_ADD_ACCESSES, native_code_times, separate_gate_up, separate_qkv

    d8, d13 = _dims(load_model("llama3-8b")), _dims(load_model("llama2-13b"))
    qkv = separate_qkv(d8, 8192, 1)
    assert sum(float(p[2]) for p in qkv) == d8.qkv_width
    assert sum(float(p[2]) for p in separate_gate_up(d8, 8192, 1)) == 2 * d8.ffn
    device = load_device("a100-80gb", "bf16")
    f13, b13 = native_code_times(d13, device, 8192, 1, True)  # MHA: no K/V expansion, three adds
    assert float(f13) == 0.0
    add_bytes = GRAD_ADD_ACCESSES * device.activation_bytes
    assert float(b13) == pytest.approx(float(elementwise_time_s(3 * add_bytes * 8192 * d13.hidden, device, 3)))
    f8, b8 = native_code_times(d8, device, 8192, 1, True)
    assert float(f8) > 0 and float(b8) > float(b13) * d8.hidden / d13.hidden
    eager = replace(device, eager_elementwise=True)
    fused, native = (layer_times(d8, dev, 1, 8192, 1, flash_attention=1) for dev in (device, eager))
    assert float(native.backward_wgrad_s) < float(fused.backward_wgrad_s)  # 2 B written instead of 8 B r+w
    assert float(native.forward_gemm_s) >= float(fused.forward_gemm_s)  # narrower GEMMs never faster
