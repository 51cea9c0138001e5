"""MoE and MLA physics: MLA attention efficiency, token permute / router kernels, capacity factor, and the
expert-data-parallel group of expert gradients and optimizer states (distcalc.compute.moe,
distcalc.compute.layer, distcalc.analyze.blocks)."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.compute import load_device
from distcalc.compute.attention import attention_efficiencies, flash_attention_times
from distcalc.compute.device import DeviceCompute
from distcalc.compute.flops import model_dims
from distcalc.hardware import load_gpu
from distcalc.compute.layer import layer_times
from distcalc.compute.moe import PERMUTE_HBM_EFFICIENCY, permute_times
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig

DATA = Path(__file__).parent / "data" / "simumax_b200_mla_attention.csv"
PEAK = 2250e12


def _rows():
    with DATA.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _measured_s(row, backward):
    a, s, dqk, dv = (int(row[c]) for c in ("heads", "seq_len", "d_qk", "d_v"))
    flops = (5.0 if backward else 2.0) * s * s * a * (dqk + dv)
    return flops / (PEAK * float(row["backward_efficiency" if backward else "forward_efficiency"]))


def test_mla_forward_slope_and_backward_reproduce_the_preset():
    """The b200 preset's MLA efficiencies are what the measurements give by the same method as its
    d_qk = d_v = 128 ones: forward the slope of time over 16..128 heads at s = 4096 (causal FLOPs), backward
    the long-sequence points; the d = 128 slope reproduces the preset's 0.59 the same way."""
    rows = {(int(r["heads"]), int(r["seq_len"]), int(r["d_qk"])): r for r in _rows()}

    def slope_efficiency(lo, hi, dqk, dv):
        t_lo, t_hi = (_measured_s(rows[(a, 4096, dqk)], False) for a in (lo, hi))
        causal_flops_per_head = 4096 * 4096 * (dqk + dv)
        return causal_flops_per_head / (PEAK * (t_hi - t_lo) / (hi - lo))

    device = load_device("b200", "bf16")
    assert slope_efficiency(16, 128, 192, 128) == pytest.approx(device.flash_mla_forward_efficiency, abs=0.01)
    assert slope_efficiency(8, 128, 128, 128) == pytest.approx(device.flash_forward_efficiency, abs=0.02)
    long = [float(rows[(64, s, 192)]["backward_efficiency"]) / 2 for s in (32768, 131072)]
    assert device.flash_mla_backward_efficiency == pytest.approx(np.mean(long), abs=0.01)


def test_mla_attention_time_against_measured_b200():
    """Golden: DeepSeek-V2/V3's attention (128 heads, s = 4096, d_qk 192, d_v 128) within 12 % of the measured
    forward and backward kernel times; the d_qk = d_v efficiencies would be too fast: > 25 % backward, > 10 %
    forward (the d = 128 forward rate, 0.60 of peak, is held to B200's power-limited 1.09 PF)."""
    device = load_device("b200", "bf16")
    row = next(r for r in _rows() if r["heads"] == "128" and r["d_qk"] == "192")
    fwd, bwd = flash_attention_times(device, 128, 4096, 4096, 192, 128)
    assert fwd / _measured_s(row, False) - 1 == pytest.approx(0.0, abs=0.12)
    assert bwd / _measured_s(row, True) - 1 == pytest.approx(0.0, abs=0.12)
    plain = DeviceCompute(**{**device.__dict__, "flash_mla_forward_efficiency": None,
                             "flash_mla_backward_efficiency": None})
    fwd0, bwd0 = flash_attention_times(plain, 128, 4096, 4096, 192, 128)
    assert fwd0 / _measured_s(row, False) - 1 < -0.10 and bwd0 / _measured_s(row, True) - 1 < -0.25


def test_mla_efficiency_only_for_unequal_widths_and_measured_devices():
    b200, h100 = load_device("b200", "bf16"), load_device("h100-sxm", "bf16")
    assert attention_efficiencies(b200, 128, 128) == (b200.flash_forward_efficiency, b200.flash_backward_efficiency)
    assert attention_efficiencies(b200, 192, 128) == (0.43, 0.33)
    assert attention_efficiencies(h100, 192, 128) == (h100.flash_forward_efficiency, h100.flash_backward_efficiency)


def test_permute_against_measured_b200():
    """Golden: TE permute + unpermute forward for the DeepSeek-V2 / -V3 shapes (T = 4096, capacity 1) within
    10 % of the times SimuMax's published bandwidth factor implies (0.5008 x 8000 GiB/s over its byte count
    e(2Th + 6Ch) plus 4 x 30 us)."""
    device = load_device("b200", "bf16")
    for h, experts, k in ((5120, 160, 6), (7168, 256, 8)):
        slots = math.ceil(4096 * k / experts) * experts
        measured = 2 * (2 * 4096 * h + 6 * slots * h) / (8000 * 2**30 * 0.5008) + 4 * 30e-6
        fwd, bwd = permute_times(device, 4096, k, h, slots / (4096 * k), 1, experts)
        assert fwd / measured - 1 == pytest.approx(0.0, abs=0.10)
        assert bwd == fwd


def test_permute_is_far_below_streaming_bandwidth_and_sorts_only_with_ep():
    device = load_device("b200", "bf16")
    assert PERMUTE_HBM_EFFICIENCY < device.memory_efficiency / 2
    one, _ = permute_times(device, 4096, 8, 7168, 1.0, 1, 256)
    eight, _ = permute_times(device, 4096, 8, 7168, 1.0, 8, 32)
    single_expert, _ = permute_times(device, 4096, 8, 7168, 1.0, 8, 1)
    assert eight > one and single_expert == pytest.approx(one)


@settings(max_examples=40, deadline=None)
@given(cf=st.floats(1.0, 2.0), ep=st.sampled_from([1, 2, 4, 8]), b=st.integers(1, 4))
def test_capacity_factor_pads_expert_work(cf, ep, b):
    """Property: padding to a larger capacity never makes a MoE layer faster, and all times are finite, >= 0."""
    d = model_dims(load_model("deepseek-v3"))
    device = load_device("b200", "bf16")
    base = layer_times(d, device, b, 4096, 1, ep=ep, moe=True, flash_attention=1)
    padded = layer_times(d, device, b, 4096, 1, ep=ep, moe=True, flash_attention=1, capacity_factor=cf)
    for t in (base.forward_s, base.backward_s, padded.forward_s, padded.backward_s):
        assert np.isfinite(t) and t >= 0
    assert padded.forward_s >= base.forward_s - 1e-12 and padded.backward_s >= base.backward_s - 1e-12


def _moe_report(ep, dp=8, layers=4, **options):
    spec = load_model("deepseek-v3").model_copy(update={"num_hidden_layers": layers, "first_k_dense_replace": 1})
    config = ParallelConfig(gpus=dp, tp=1, pp=1, dp=dp, ep=ep, micro_batch=1, global_batch=4 * dp, seq_len=4096,
                            distributed_optimizer=True)
    return analyze(spec, "dgx-b200", config, AnalyzeOptions(distributed_optimizer=True, **options))


def test_expert_gradients_use_the_expert_data_parallel_group():
    """EP = DP = 8: every rank holds different experts, so expert gradients are reduced nowhere and their
    optimizer states are not sharded; EP = 2: they go over the 4-rank expert-DP group, in their own messages."""
    full, half = _moe_report(8), _moe_report(2)
    full_notes = [m["note"] for m in full.communication if m["dim"] == "dp"]
    half_notes = [m["note"] for m in half.communication if m["dim"] == "dp"]
    assert not any(n.startswith("expert") for n in full_notes)
    assert "expert gradient ReduceScatter" in half_notes and "gradient ReduceScatter" in half_notes
    rs = {m["note"]: m["size_bytes"] for m in half.communication if m["dim"] == "dp"}
    assert rs["expert gradient ReduceScatter"] > rs["gradient ReduceScatter"]  # 256 experts / 2 outweigh the rest
    # optimizer: EP 8 keeps 1/8 of the experts unsharded (32 experts), EP 2 holds 1/2 sharded over 4 (also 32
    # experts' worth), so the Adam steps match; the dense part is sharded over 8 in both
    no_zeroing = dict(grad_buffer_zero_bytes_per_parameter=0.0)
    assert _moe_report(8, **no_zeroing).time_breakdown["optimizer_s"] == pytest.approx(
        _moe_report(2, **no_zeroing).time_breakdown["optimizer_s"], rel=1e-6)
    # ... but every rank zeroes the gradient buffer of all the experts it holds (128 at EP 2, 32 at EP 8)
    assert half.time_breakdown["optimizer_s"] > full.time_breakdown["optimizer_s"]


def test_dense_model_has_no_expert_messages():
    spec = load_model("llama3-8b")
    config = ParallelConfig(gpus=8, tp=1, pp=1, dp=8, micro_batch=1, global_batch=32, seq_len=4096,
                            distributed_optimizer=True)
    report = analyze(spec, "dgx-h100", config, AnalyzeOptions(distributed_optimizer=True))
    assert not any(m["note"].startswith("expert") for m in report.communication)


def test_mla_projection_chain():
    """DeepSeek-V3's MLA: q down (7168 -> 1536), q up (1536 -> 128 x 192 / t), kv down (7168 -> 512 + 64),
    kv up (512 -> 128 x (128 + 128) / t); the down projections are duplicated on every TP rank, the up
    projections split; their weights add up to the model's attention QKV parameters."""
    d = model_dims(load_model("deepseek-v3"))
    from distcalc.compute.mla import qkv_projections

    one, eight = qkv_projections(d, 4096, 1), qkv_projections(d, 4096, 8)
    assert [g[2] for g in one.gemms] == [1536, 128 * 192, 576, 128 * 256]
    assert [g[2] for g in eight.gemms] == [1536, 128 * 192 / 8, 576, 128 * 256 / 8]
    assert sum(g[2] * g[3] for g in one.gemms) == pytest.approx(d.qkv_width * d.hidden, rel=1e-3)
    assert one.latent_norms == 2 and one.latent_norm_elements == 4096 * (1536 + 512)
    # fused MLA RoPE: q's rotary part in place (64 per head) + rotary_fwd_kv_kernel building key and value
    # (reads 128 + 128, writes 192 + 128 per head: 288 four-byte elements) + the shared rotary key
    assert one.rope_elements == 4096 * (128 * (64 + (128 + 192 + 2 * 128) / 2) + 64)
    assert eight.rope_elements == 4096 * (128 * (64 + 288) / 8 + 64)


def test_gqa_keeps_the_fused_qkv_gemm():
    d = model_dims(load_model("llama3-8b"))
    from distcalc.compute.mla import qkv_projections

    p = qkv_projections(d, 4096, 2)
    assert p.gemms == [(1, 4096, d.qkv_width / 2, d.hidden)] and p.latent_norms == 0
    assert p.rope_elements == 4096 * (32 + 8) * 128 / 2


def _mixtral(tp, ep, sp=True, dp=2):
    config = ParallelConfig(gpus=tp * dp, tp=tp, pp=1, dp=dp, ep=ep, micro_batch=1, global_batch=8 * dp,
                            seq_len=4096, sequence_parallel=sp, distributed_optimizer=True)
    return analyze(load_model("mixtral-8x7b"), "dgx-h100", config)


def test_expert_tensor_parallel_gathers_k_copies_of_each_token():
    """Mixtral (top-2, no shared expert) at TP 4 with SP: every layer keeps the attention's AllGather /
    ReduceScatter of b*s*h, the MLP's are replaced by the expert-TP AllGather / ReduceScatter of k*b*s*h."""
    report = _mixtral(4, 1)
    tp = {(m["note"], m["phase"]): m for m in report.communication if m["dim"] == "tp"}
    dense = tp[("g (SP) before QKV and MLP", "forward")]
    expert = tp[("expert TP AllGather of dispatched tokens", "forward")]
    assert expert["size_bytes"] == pytest.approx(2 * dense["size_bytes"])
    assert dense["count"] == pytest.approx(expert["count"]) == pytest.approx(8 * 32)  # micro-batches x layers
    assert ("expert TP ReduceScatter before combine", "forward") in tp


def test_expert_tp_only_with_tp_and_sp():
    for report in (_mixtral(1, 2, sp=False, dp=4), _mixtral(4, 1, sp=False)):
        assert not any(m["note"].startswith("expert TP") for m in report.communication)


@pytest.mark.parametrize("ep", [1, 2, 8])
def test_dp_rows_add_up_with_expert_data_parallel(ep):
    data = _moe_report(ep).to_dict()
    rows = sum(c["exposed_s"] for c in data["communication"] if c["dim"] == "dp")
    assert rows == pytest.approx(data["time_breakdown"]["dp_exposed_s"], rel=1e-9, abs=1e-12)


def test_dropless_imbalance_loads_the_busiest_rank_like_padding():
    """Dropless routing with the busiest EP rank at 1.3x the mean routed tokens costs what padding every expert
    to capacity 1.3 costs, less the router's capacity-mask kernels that only capacity-bound routing runs (3 MoE
    layers x 4 micro-batches); both are slower than balanced routing, and the capacity factor no longer
    matters."""
    from distcalc.compute.moe import router_kernel_counts, router_times

    spec = load_model("deepseek-v3").model_copy(update={"num_hidden_layers": 4, "first_k_dense_replace": 1})
    config = ParallelConfig(gpus=8, tp=1, pp=1, dp=8, ep=8, micro_batch=1, global_batch=32, seq_len=4096,
                            distributed_optimizer=True)

    def step(**moe):
        return analyze(spec, "dgx-b200", config, AnalyzeOptions(distributed_optimizer=True, gpu_speed_cv=0.0,
                                                                **moe)).step_time_s

    balanced, dropless, padded = step(), step(moe_load_imbalance=1.3), step(moe_capacity_factor=1.3)
    device = load_device(load_gpu("b200"))
    mask = [sum(router_times(device, 4096, 256, router_kernel_counts(capacity=c))) for c in (True, False)]
    assert padded - dropless == pytest.approx(3 * 4 * float(mask[0] - mask[1]), rel=1e-6)
    assert dropless > balanced * 1.02
    assert step(moe_load_imbalance=1.3, moe_capacity_factor=2.0) == pytest.approx(dropless, rel=1e-12)


def test_load_imbalance_below_one_is_refused():
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        AnalyzeOptions(moe_load_imbalance=0.9)


MIXTRAL_CLI = ["analyze", "--model", "mixtral-8x7b", "--cluster", "dgx-h100", "--gpus", "32", "--tp", "2", "--pp", "2",
               "--ep", "4", "--sequence-parallel", "--micro-batch", "1", "--global-batch", "64", "--seq-len", "4096",
               "--distributed-optimizer", "--json"]


def test_cli_moe_routing_options():
    import json

    from typer.testing import CliRunner

    from distcalc.cli import app

    runner = CliRunner()
    steps = {}
    for extra in ([], ["--moe-load-imbalance", "1.25"], ["--moe-capacity-factor", "1.25"]):
        result = runner.invoke(app, MIXTRAL_CLI + extra)
        assert result.exit_code == 0, result.output
        steps[tuple(extra[:1])] = json.loads(result.stdout)["step_time_s"]
    # the same expert load; dropless routing skips the router's capacity-mask kernels
    assert steps[("--moe-load-imbalance",)] == pytest.approx(steps[("--moe-capacity-factor",)], rel=5e-3)
    assert steps[("--moe-load-imbalance",)] < steps[("--moe-capacity-factor",)]
    assert steps[("--moe-load-imbalance",)] > steps[()]
    bad = runner.invoke(app, MIXTRAL_CLI + ["--moe-load-imbalance", "0.5"])
    assert bad.exit_code == 2 and "--moe-load-imbalance" in bad.output and len(bad.output.strip().splitlines()) == 1


def test_moe_activation_memory_scales_with_routed_slots_and_keeps_gathered_input():
    """Expert activations grow with the routed slots per token (capacity factor / dropless imbalance); under
    expert TP the gathered expert input (2h per slot) is stored whole on every TP rank, the rest split by t."""
    from distcalc.memory.activations import layer_activation_bytes
    from distcalc.model.dims import model_dims as memory_dims

    d = memory_dims(load_model("mixtral-8x7b"))
    args = dict(seq_len=4096, micro_batch=1, cp=1, sequence_parallel=True, recompute=0, flash=True)
    one, _ = layer_activation_bytes(d, True, tp=1, **args)
    padded, _ = layer_activation_bytes(d, True, tp=1, moe_token_factor=1.5, **args)
    k, h, f = 2, 4096, 14336
    assert padded - one == pytest.approx(0.5 * 4096 * k * (2 * 2 * h + 6 * f))
    two, _ = layer_activation_bytes(d, True, tp=2, **args)
    dense1, _ = layer_activation_bytes(d, False, tp=1, **args)
    dense2, _ = layer_activation_bytes(d, False, tp=2, **args)
    assert dense2 == pytest.approx(dense1 / 2)  # dense layer with SP: everything split
    assert two - one / 2 == pytest.approx(4096 * k * 2 * h / 2)  # the expert input is the part not halved


def test_analyze_memory_takes_the_routing_factor():
    config = ParallelConfig(gpus=32, tp=2, pp=2, dp=8, ep=4, micro_batch=1, global_batch=64, seq_len=4096,
                            sequence_parallel=True, distributed_optimizer=True)
    spec = load_model("mixtral-8x7b")
    base = analyze(spec, "dgx-h100", config).memory
    heavy = analyze(spec, "dgx-h100", config, AnalyzeOptions(distributed_optimizer=True,
                                                             moe_load_imbalance=1.25)).memory
    assert heavy["activations_bytes"] > base["activations_bytes"]


def test_mla_latents_are_stored_whole_on_every_tp_rank():
    """DeepSeek-V3: the q (1536) and kv (512) latents add 2 x 2 B per latent element per token, not split by TP."""
    from distcalc.memory.activations import layer_activation_bytes
    from distcalc.model.dims import model_dims as memory_dims

    spec = load_model("deepseek-v3")
    d = memory_dims(spec)
    assert d.mla_latent == 1536 + 512
    args = dict(seq_len=4096, micro_batch=1, cp=1, sequence_parallel=True, recompute=0, flash=True)
    from dataclasses import replace

    no_latent = replace(d, q_lora_rank=0, kv_lora_rank=0)  # mla_latent is their sum (one ModelDims)
    for tp in (1, 4):
        with_latent, _ = layer_activation_bytes(d, False, tp=tp, **args)
        without, _ = layer_activation_bytes(no_latent, False, tp=tp, **args)
        assert with_latent - without == pytest.approx(4096 * 4 * (1536 + 512))
