"""Megatron-LM local linears add the QKV bias and reduce bias gradients in kernels of their own."""

from __future__ import annotations

from dataclasses import replace

import pytest

from distcalc.analyze import AnalyzeOptions, ElementwiseKernels, analyze
from distcalc.compute import load_device, model_dims
from distcalc.compute.layer import LOCAL_BIAS_ADD_ACCESSES, LOCAL_BIAS_GRAD_ACCESSES, layer_times
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig

TOKENS, TP = 4096, 2


def _times(model: str, local: bool, sequence_parallel: int = 0):
    device = replace(load_device("a100-80gb", "fp16"), unfused_linear_bias=local)
    return layer_times(model_dims(load_model(model)), device, 4, 1024, TP, sequence_parallel=sequence_parallel)


@pytest.mark.parametrize("sp", [0, 1])
def test_biased_gpt_layer_moves_the_counted_bias_bytes(sp):
    dims = model_dims(load_model("gpt3-175b"))
    assert dims.qkv_bias and dims.out_bias and dims.mlp_bias
    fused, local = _times("gpt3-175b", False, sp), _times("gpt3-175b", True, sp)
    device = load_device("a100-80gb", "fp16")
    stream = TOKENS * dims.hidden / (TP if sp else 1)
    qkv, fc1 = TOKENS * dims.qkv_width / TP, TOKENS * dims.ffn / TP
    bw, k = device.memory_bandwidth_bytes_per_s, device.kernel_overhead_s
    e = device.activation_bytes
    forward = qkv * LOCAL_BIAS_ADD_ACCESSES * e / bw + k
    backward = (qkv + fc1 + 2 * stream) * LOCAL_BIAS_GRAD_ACCESSES * e / bw + 4 * k
    assert float(local.forward_elementwise_s - fused.forward_elementwise_s) == pytest.approx(forward, rel=1e-9)
    assert float(local.backward_s - fused.backward_s) == pytest.approx(backward, rel=1e-9)
    # GEMMs are untouched
    assert float(local.forward_gemm_s) == float(fused.forward_gemm_s)


def test_layer_without_biases_is_unchanged():
    assert not model_dims(load_model("llama3-8b")).qkv_bias
    fused, local = _times("llama3-8b", False), _times("llama3-8b", True)
    assert float(local.total_s()) == float(fused.total_s())


def test_megatron_local_step_is_slower_and_default_is_fused():
    config = ParallelConfig(gpus=8, tp=8, micro_batch=1, global_batch=8, seq_len=2048)
    fused = analyze("megatron-22b", "dgx-a100", config)
    local = analyze("megatron-22b", "dgx-a100", config,
                    AnalyzeOptions(elementwise_kernels=ElementwiseKernels.MEGATRON_LOCAL))
    assert local.step_time_s > fused.step_time_s
    assert local.options["elementwise_kernels"] == "megatron-local"
    assert fused.options["elementwise_kernels"] == "fused"
