"""PyTorch's context-parallel ring attention (torchtitan CP): kernels and eager merges, messages, exposure."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, AttentionKernel, ContextParallelAlgorithm, analyze
from distcalc.analyze.torch_cp import (GATHER_NOTE, GRAD_NOTE, PASS_NOTE, hidden_exposed_s, torch_cp_exposed_s,
                                       torch_cp_messages)
from distcalc.cli import app
from distcalc.compute import load_device
from distcalc.compute.attention import attention_kernel_device, flash_attention_times, ring_attention_times
from distcalc.compute.device import elementwise_time_s
from distcalc.compute.torch_cp import (BACKWARD_ONCE, BACKWARD_STEP_HIGHER_SOURCE, BACKWARD_STEP_LOWER_SOURCE,
                                      FORWARD_ONCE, FORWARD_STEP_FULL, FORWARD_STEP_PARTIAL, TorchRingTimes,
                                      torch_ring_attention_times)
from distcalc.parallel import ParallelConfig, Recompute
from distcalc.traffic import Comm, Phase

H100 = attention_kernel_device(load_device("h100-sxm"), AttentionKernel.FLASH2)
TORCHTITAN = dict(recompute="selective-op", elementwise_kernels="eager", fsdp_sharding="per-parameter",
                  attention_kernel="flash2")


def _eager(cost, q, kv):
    return elementwise_time_s(cost[0] * q + cost[1] * kv, H100, cost[2])


def test_kernels_and_eager_work_by_formula():
    bh, s, cp, d = 32, 65536, 8, 128
    local = s / cp
    q = bh * local * d
    t = torch_ring_attention_times(H100, bh, s, cp, d, d, q, q)
    diag_f, diag_b = flash_attention_times(H100, bh, local, local, d, d, causal=True)
    step_f, step_b = flash_attention_times(H100, bh, local, local / 2, d, d, causal=False)
    assert t.first_forward_s == pytest.approx(diag_f + _eager(FORWARD_ONCE, q, q), rel=1e-12)
    assert t.first_backward_s == pytest.approx(diag_b + _eager(BACKWARD_ONCE, q, q), rel=1e-12)
    # the full-query merge (38 B per element) is the costlier forward step; backward the lower-source one
    assert t.step_forward_s == pytest.approx(step_f + _eager(FORWARD_STEP_FULL, q, q), rel=1e-12)
    assert t.step_backward_s == pytest.approx(step_b + _eager(BACKWARD_STEP_LOWER_SOURCE, q, q), rel=1e-12)
    assert t.forward_s == pytest.approx(t.first_forward_s + 7 * t.step_forward_s, rel=1e-12)
    assert t.backward_s == pytest.approx(t.first_backward_s + 7 * t.step_backward_s, rel=1e-12)
    # byte counts of the module docstring: (per E_q, per E_kv, kernels)
    assert FORWARD_STEP_FULL == (38.0, 8.0, 10) and FORWARD_STEP_PARTIAL == (27.0, 8.0, 12)
    assert BACKWARD_STEP_LOWER_SOURCE == (10.0, 50.0, 7) and BACKWARD_STEP_HIGHER_SOURCE == (13.0, 44.0, 7)


@settings(max_examples=40, deadline=None)
@given(cp=st.sampled_from([2, 4, 8, 16, 32]), s_k=st.sampled_from([8, 32, 64, 128, 256]),
       heads=st.sampled_from([8, 16, 32]), kv_heads=st.sampled_from([1, 8]))
def test_torch_ring_costs_more_than_te_ring_and_grows_with_cp(cp, s_k, heads, kv_heads):
    s, d = s_k * 1024, 128
    q = heads * (s / cp) * d
    t = torch_ring_attention_times(H100, heads, s, cp, d, d, q, q)
    te_f, te_b = ring_attention_times(H100, heads, s, cp, d, d, q, kv_heads * (s / cp) * d)
    values = [t.forward_s, t.backward_s, t.first_forward_s, t.step_forward_s, t.first_backward_s, t.step_backward_s]
    assert all(np.isfinite(v) and v > 0 for v in values)
    # same kernels, FP32 merges and copies on top (and K,V at all heads)
    assert t.forward_s > te_f and t.backward_s > te_b
    more = torch_ring_attention_times(H100, heads, s, 2 * cp, d, d, q / 2, q / 2)
    assert more.forward_s > 0.5 * t.forward_s  # halving each rank's share does not halve its time


def test_messages_sizes_and_counts():
    b, s, h, e, tp, cp = 1, 65536, 4096, 2, 1, 8
    kv_block = 2 * b * (s / cp) * h * e / tp
    gather = torch_cp_messages(b, s, h, e, tp, cp, allgather=True)
    by = {(m.note, m.phase): m for m in gather}
    ag = by[(GATHER_NOTE, Phase.FORWARD)]
    assert ag.collective == Comm.ALL_GATHER and ag.size_bytes == pytest.approx(cp * kv_block) and ag.count == 1
    assert by[(GATHER_NOTE, Phase.BACKWARD)].count == 1 and by[(GATHER_NOTE, Phase.RECOMPUTE)].count == 0
    grad = by[(GRAD_NOTE, Phase.BACKWARD)]
    assert grad.collective == Comm.SEND_RECV and grad.size_bytes == pytest.approx(2 * kv_block) and grad.count == cp
    ring = {(m.note, m.phase): m for m in torch_cp_messages(b, s, h, e, tp, cp, False, Recompute.FULL.code)}
    assert ring[(PASS_NOTE, Phase.FORWARD)].count == cp - 1 and ring[(PASS_NOTE, Phase.RECOMPUTE)].count == cp - 1
    assert ring[(PASS_NOTE, Phase.FORWARD)].size_bytes == pytest.approx(kv_block)
    assert all(float(np.asarray(m.count)) == 0 for m in torch_cp_messages(b, s, h, e, tp, 1, True))


@settings(max_examples=60, deadline=None)
@given(t=st.floats(0, 1), w=st.floats(0, 1), kappa=st.floats(0, 1))
def test_hidden_transfer_adds_between_its_excess_and_itself(t, w, kappa):
    x = hidden_exposed_s(t, w, kappa)
    assert max(t - w, 0.0) - 1e-15 <= x <= t + 1e-15
    assert hidden_exposed_s(t + 0.1, w, kappa) >= x


def _entries(times: dict[tuple[str, Phase], float], allgather: bool, cp: int):
    msgs = torch_cp_messages(1, 65536, 4096, 2, 1, cp, allgather)
    return [(m, np.asarray(times.get((m.note, m.phase), 0.0)), None) for m in msgs]


@settings(max_examples=40, deadline=None)
@given(cp=st.integers(2, 64), ag=st.floats(1e-4, 1), p=st.floats(1e-4, 1), g=st.floats(1e-4, 1),
       allgather=st.booleans())
def test_exposure_limits(cp, ag, p, g, allgather):
    note = GATHER_NOTE if allgather else PASS_NOTE
    per = {(note, Phase.FORWARD): ag if allgather else p, (note, Phase.BACKWARD): ag if allgather else p,
           (GRAD_NOTE, Phase.BACKWARD): g}
    entries = _entries(per, allgather, cp)
    no_compute = TorchRingTimes(*([0.0] * 6))
    fwd, both = torch_cp_exposed_s(entries, no_compute, 0.2, cp, allgather)
    kv = 2 * ag if allgather else 2 * (cp - 1) * p
    # nothing to hide behind: every transfer is on the critical path
    assert both == pytest.approx(kv + cp * g, rel=1e-9)
    endless = TorchRingTimes(*([1e9] * 6))
    fwd, both = torch_cp_exposed_s(entries, endless, 0.0, cp, allgather)
    # everything hidden (κ = 0) but the last dK,dV pass, waited for after the loop
    assert fwd == pytest.approx(0.0, abs=1e-12) and both == pytest.approx(g, rel=1e-9)


def _report(alg: str, cp: int, seq_len: int):
    config = ParallelConfig(gpus=8, cp=cp, dp=8 // cp, micro_batch=1, global_batch=8 // cp, seq_len=seq_len,
                            zero=3, recompute="selective-op", flash_attention=True)
    options = AnalyzeOptions(cp_algorithm=alg, **{k: v for k, v in TORCHTITAN.items() if k != "recompute"})
    return analyze("llama3-8b", "dgx-h100", config, options)


def test_torch_cp_is_slower_than_te_ring_and_the_same_without_cp():
    ring = _report("ring", 8, 65536)
    for alg in ("torch-allgather", "torch-alltoall"):
        torch = _report(alg, 8, 65536)
        assert torch.step_time_s > 1.05 * ring.step_time_s
        assert torch.time_breakdown["cp_exposed_s"] > ring.time_breakdown["cp_exposed_s"]
        assert any("torch CP" in row["note"] for row in torch.communication if row["dim"] == "cp")
        assert _report(alg, 1, 8192).step_time_s == pytest.approx(_report("ring", 1, 8192).step_time_s, rel=1e-12)


def test_cli_accepts_the_torch_algorithms_and_refuses_others():
    runner = CliRunner()
    base = ["analyze", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--cp", "8", "--dp", "1",
            "--global-batch", "1", "--seq-len", "65536", "--zero", "3"]
    result = runner.invoke(app, base + ["--cp-algorithm", "torch-allgather"])
    assert result.exit_code == 0, result.output
    assert "torch-allgather" in result.output
    bad = runner.invoke(app, base + ["--cp-algorithm", "torch-ring"])
    assert bad.exit_code == 2 and "torch-ring" in bad.output


def test_batch_evaluation_matches_single_configurations():
    from distcalc.analyze.report import evaluate_batch
    cps = np.array([1, 2, 4, 8])
    for alg in ("torch-allgather", "torch-alltoall"):
        batch = evaluate_batch("llama3-8b", "dgx-h100", {"cp": cps, "dp": 8 // cps, "micro_batch": 1,
                                                         "global_batch": 8 // cps, "seq_len": 65536, "zero": 3,
                                                         "flash_attention": 1},
                               options=AnalyzeOptions(cp_algorithm=alg), memory=False)
        for i, cp in enumerate(cps):
            config = ParallelConfig(gpus=8, cp=int(cp), dp=8 // int(cp), micro_batch=1, global_batch=8 // int(cp),
                                    seq_len=65536, zero=3, flash_attention=True)
            one = analyze("llama3-8b", "dgx-h100", config, AnalyzeOptions(cp_algorithm=alg))
            assert float(batch["step_time_s"][i]) == pytest.approx(one.step_time_s, rel=1e-9)


def test_memory_buffers_by_formula_and_only_for_the_torch_algorithms():
    from distcalc.compute import model_dims
    from distcalc.memory import MemoryOptions, memory_report
    from distcalc.memory.torch_cp import torch_cp_buffer_bytes
    from distcalc.model import load_model
    spec = load_model("llama3-8b")
    dims = model_dims(spec)
    e = 1 * (262144 / 32) * 32 * 128  # elements of Q (= K, V after repeat_kv) on one rank
    gathered = torch_cp_buffer_bytes(dims, 1, 262144, 1, 32, allgather=True)
    assert gathered == pytest.approx((2 * 32 + 2) * e * 2 + 20 * e)
    assert torch_cp_buffer_bytes(dims, 1, 262144, 1, 32, allgather=False) == pytest.approx(6 * e * 2 + 20 * e)
    assert torch_cp_buffer_bytes(dims, 1, 8192, 1, 1, allgather=True) == 0
    config = ParallelConfig(gpus=32, cp=32, dp=1, micro_batch=1, global_batch=1, seq_len=262144, zero=3,
                            flash_attention=True)
    base = {alg: memory_report(spec, config, "h100-sxm", MemoryOptions(cp_algorithm=alg)).stages[0]
            for alg in ("ring", "ulysses", "all-gather", "torch-allgather")}
    assert base["ring"].total_bytes == base["ulysses"].total_bytes == base["all-gather"].total_bytes
    added = base["torch-allgather"].communication_buffers_bytes - base["ring"].communication_buffers_bytes
    assert added == pytest.approx(gathered, rel=1e-9)


def test_refused_without_flash_attention():
    from distcalc.errors import ConfigError
    config = ParallelConfig(gpus=8, cp=8, dp=1, micro_batch=1, global_batch=1, seq_len=65536, flash_attention=False)
    with pytest.raises(ConfigError, match="torch-allgather needs flash attention"):
        analyze("llama3-8b", "dgx-h100", config, AnalyzeOptions(cp_algorithm="torch-allgather"))
    analyze("llama3-8b", "dgx-h100", config, AnalyzeOptions(cp_algorithm="ring"))  # the TE paths still run
    result = CliRunner().invoke(app, ["analyze", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8",
                                      "--cp", "8", "--dp", "1", "--global-batch", "1", "--seq-len", "65536",
                                      "--no-flash-attention", "--cp-algorithm", "torch-alltoall"])
    assert result.exit_code == 2 and "error: cp_algorithm torch-alltoall needs flash attention" in result.output
