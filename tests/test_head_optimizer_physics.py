"""Output layer + loss and per-step optimizer bookkeeping, counted from Megatron-Core's source."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.compute import head_times, load_device
from distcalc.compute.flops import model_dims
from distcalc.compute.device import elementwise_time_s, sixteen_bit
from distcalc.compute.layer import CE_BACKWARD_BYTES_PER_LOGIT, CE_FORWARD_BYTES_PER_LOGIT
from distcalc.hardware import load_gpu
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig


def test_cross_entropy_bytes_match_the_op_list_and_simumax_count():
    # SimuMax's ce_theoretical_bytes (simu_tools/efficency_test/test_ce_permute_efficiency.py), per logit,
    # bf16 logits, dropping the per-token terms: fwd 4+2, 4, 4+4, 2*4, 4, 4+4; bwd 4+4, 4+2
    assert CE_FORWARD_BYTES_PER_LOGIT == (4 + 2) + 4 + (4 + 4) + 2 * 4 + 4 + (4 + 4) == 38
    assert CE_BACKWARD_BYTES_PER_LOGIT == (4 + 4) + (4 + 2) == 14


@settings(max_examples=20, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1024, 4096]))
def test_loss_elementwise_time_scales_with_logits_per_rank(tp, seq):
    """Doubling the vocabulary adds exactly the logits GEMMs and the cross-entropy bytes of the added logits."""
    device = load_device(load_gpu("h100-sxm"))
    base, wide = _dims_for(32000), _dims_for(64000)
    a = head_times(base, device, 1, seq, tp)
    b = head_times(wide, device, 1, seq, tp)
    d16 = sixteen_bit(device)
    added_logits = seq * 32000 / tp
    gemm_f = lambda dims: float(np.asarray(head_times(dims, device, 1, seq, tp).output_forward_s)) - float(  # noqa: E731
        elementwise_time_s(seq * dims.vocab / tp * CE_FORWARD_BYTES_PER_LOGIT + seq * dims.hidden * 4.0, d16, 7))
    assert float(b.output_forward_s) - float(a.output_forward_s) == pytest.approx(
        gemm_f(wide) - gemm_f(base) + added_logits * CE_FORWARD_BYTES_PER_LOGIT / d16.memory_bandwidth_bytes_per_s,
        rel=1e-9)
    assert float(b.output_backward_s) > float(a.output_backward_s)


def _dims_for(vocab):
    return replace(model_dims(load_model("llama2-7b")), vocab=vocab)


def _gpt3(**kw):
    base = dict(gpus=64, tp=8, pp=8, micro_batch=1, global_batch=64, seq_len=2048, recompute="selective",
                sequence_parallel=True)
    return ParallelConfig(**{**base, **kw})


def test_distributed_optimizer_still_zeroes_the_whole_gradient_buffer():
    """ZeRO-1 / distributed optimizer: Adam runs on 1/d of the parameters, zero_grad_buffer on all of them."""
    opts = dict(gpu_speed_cv=0.0, distributed_optimizer=True)
    config = _gpt3(gpus=512, distributed_optimizer=True)
    with_zeroing = analyze("gpt3-175b", "dgx-a100", config, AnalyzeOptions(**opts)).time_breakdown["optimizer_s"]
    without = analyze("gpt3-175b", "dgx-a100", config,
                      AnalyzeOptions(**opts, grad_buffer_zero_bytes_per_parameter=0.0)).time_breakdown["optimizer_s"]
    # the zeroing of all local parameters (175B / (tp·pp) ≈ 2.7 B, 4 bytes each) dominates a 1/8 Adam shard
    params_gpu = 175e9 / 64
    device = load_device(load_gpu("a100-80gb"))
    expected = params_gpu * 4.0 / device.memory_bandwidth_bytes_per_s
    assert with_zeroing - without == pytest.approx(expected, rel=0.05)
    # ... while the Adam step itself is sharded over the 8 data-parallel ranks
    adam_shard = params_gpu / 8 * 38.0 / device.memory_bandwidth_bytes_per_s
    assert without == pytest.approx(adam_shard + 20 * device.kernel_overhead_s, rel=0.05)


def test_replicated_optimizer_is_unchanged_by_the_split():
    """Without ZeRO the zeroing and the Adam step cover the same parameters: 38 + 4 = the former 42 bytes."""
    config = _gpt3()
    a = analyze("gpt3-175b", "dgx-a100", config, AnalyzeOptions(gpu_speed_cv=0.0)).time_breakdown["optimizer_s"]
    b = analyze("gpt3-175b", "dgx-a100", config,
                AnalyzeOptions(gpu_speed_cv=0.0, optimizer_bytes_per_parameter=42.0,
                               grad_buffer_zero_bytes_per_parameter=0.0)).time_breakdown["optimizer_s"]
    assert a == pytest.approx(b, rel=1e-12)
