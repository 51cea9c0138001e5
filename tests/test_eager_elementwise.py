"""PyTorch-eager elementwise kernels (torchtitan-style RMSNorm, SwiGLU, RoPE) cost more than fused ones."""

from __future__ import annotations

from dataclasses import replace

import pytest

from distcalc.analyze import AnalyzeOptions, ElementwiseKernels, analyze
from distcalc.compute import load_device, model_dims
from distcalc.compute.layer import (EAGER_EXTRA_KERNELS, EAGER_RMSNORM_BYTES, EAGER_ROPE_BYTES, EAGER_SWIGLU_BYTES,
                                    layer_times)
from distcalc.compute.pytorch_layer import native_code_times
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig

CONFIG = ParallelConfig(gpus=8, dp=8, micro_batch=1, global_batch=8, seq_len=8192)


def _elementwise_s(model: str, eager: bool) -> tuple[float, float]:
    device = replace(load_device("a100-80gb"), eager_elementwise=eager)
    times = layer_times(model_dims(load_model(model)), device, 1, 8192, 1, flash_attention=1)
    return float(times.forward_elementwise_s), float(times.backward_s - times.backward_wgrad_s
                                                     - times.backward_dgrad_s)


def test_eager_llama_layer_moves_the_counted_extra_bytes():
    dims = model_dims(load_model("llama3-8b"))
    fused_f, _ = _elementwise_s("llama3-8b", False)
    eager_f, _ = _elementwise_s("llama3-8b", True)
    device = load_device("a100-80gb")
    stream, act = 8192 * dims.hidden, 8192 * dims.ffn
    rope = 8192 * (dims.heads + dims.kv_heads) * dims.head_dim
    extra_bytes = (2 * (EAGER_RMSNORM_BYTES[0] - 4.0) * stream + (EAGER_SWIGLU_BYTES[0] - 6.0) * act
                   + (EAGER_ROPE_BYTES - 4.0) * rope)
    expected = (extra_bytes / device.memory_bandwidth_bytes_per_s
                + sum(EAGER_EXTRA_KERNELS.values()) * device.kernel_overhead_s)
    # plus the Llama code's GQA key/value expansion copies (distcalc.compute.pytorch_layer)
    expected += float(native_code_times(dims, device, 8192, 1, True)[0])
    assert eager_f - fused_f == pytest.approx(expected, rel=1e-9)


def test_gpt_layers_are_unchanged_by_eager_kernels():
    # LayerNorm and GeLU are single native kernels in eager PyTorch; GPT-3 has no RoPE
    # (the backward elementwise is backward - wgrad - dgrad: eager writes 16-bit weight gradients, so the
    # subtraction rounds differently in the last bit)
    assert _elementwise_s("gpt3-175b", True) == pytest.approx(_elementwise_s("gpt3-175b", False), rel=1e-12)


def test_eager_step_is_slower_and_default_is_fused():
    fused = analyze("llama3-8b", "dgx-a100", CONFIG)
    eager = analyze("llama3-8b", "dgx-a100", CONFIG,
                    AnalyzeOptions(elementwise_kernels=ElementwiseKernels.EAGER))
    assert eager.step_time_s > fused.step_time_s
    assert fused.options["elementwise_kernels"] == "fused"
