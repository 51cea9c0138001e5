"""The kernels and buffers that move activation-sized tensors follow the device's / dtype's activation bytes
(``Precision.activation_bytes``, 2 in every recipe today) instead of a hard-coded 2; the parameter-sized ones
stay 16-bit. Each check gives the device 4-byte activations and expects the activation traffic to double."""

from __future__ import annotations

from dataclasses import replace

import pytest

from distcalc.compute import load_device, model_dims
from distcalc.compute.device import gemm_time_s
from distcalc.compute.layer import local_bias_times
from distcalc.compute.moe import permute_times
from distcalc.compute.pytorch_layer import native_code_times
from distcalc.memory import MemoryOptions
from distcalc.memory.batch import formula_inputs
from distcalc.memory.stage import config_terms
from distcalc.model import load_model
from distcalc.precision import Precision


def _pair(gpu: str, dtype: str = "bf16"):
    """The preset device without launch overheads, with 2- and 4-byte activations."""
    base = replace(load_device(gpu, dtype), kernel_overhead_s=0.0)
    return base, replace(base, activation_bytes=2 * base.activation_bytes)


def test_every_recipe_keeps_16_bit_activations():
    assert {p.activation_bytes for p in Precision} == {2.0}


@pytest.mark.parametrize("ep, local_experts", [(1, 256), (8, 32)])  # without and with the local-expert sort
def test_moe_permute_moves_the_devices_activation_bytes(ep, local_experts):
    two, four = _pair("b200", "fp8")
    f2, b2 = permute_times(two, 4096, 8, 7168, 1.0, ep, local_experts)
    f4, b4 = permute_times(four, 4096, 8, 7168, 1.0, ep, local_experts)
    assert float(f4) == pytest.approx(2 * float(f2), rel=1e-12) and float(b4) == pytest.approx(2 * float(b2), rel=1e-12)


def test_local_bias_kernels_move_the_devices_activation_bytes():
    dims = model_dims(load_model("gpt3-175b"))
    two, four = (replace(d, unfused_linear_bias=True) for d in _pair("a100-80gb", "fp16"))
    t2 = local_bias_times(dims, two, 4096, 4096 * dims.hidden, 2, False)
    t4 = local_bias_times(dims, four, 4096, 4096 * dims.hidden, 2, False)
    assert all(x4 == pytest.approx(2 * x2, rel=1e-12) for x2, x4 in zip(t2, t4)) and t2[0] > 0 and t2[1] > 0


def test_pytorch_native_adds_and_kv_copies_move_the_devices_activation_bytes():
    dims = model_dims(load_model("llama3-8b"))  # GQA: K/V expansion copies and three gradient adds
    two, four = _pair("h100-sxm")
    f2, b2 = native_code_times(dims, two, 8192, 1, True)
    f4, b4 = native_code_times(dims, four, 8192, 1, True)
    assert float(f4) == pytest.approx(2 * float(f2), rel=1e-12) and float(b4) == pytest.approx(2 * float(b2), rel=1e-12)


def test_gemm_output_defaults_to_the_devices_activation_bytes():
    two, four = _pair("h100-sxm")
    shape = (1, 8192, 8192, 256)  # small k: the epilogue's write of C matters
    assert gemm_time_s(*shape, four) == pytest.approx(gemm_time_s(*shape, two, out_bytes=4.0), rel=1e-12)
    assert gemm_time_s(*shape, four) > gemm_time_s(*shape, two)


def test_torch_cp_buffers_in_the_memory_model_follow_activation_bytes():
    dims = model_dims(load_model("llama3-8b"))
    elements = 1 * (262144 / 32) * 32 * 128  # Q (= K, V after repeat_kv) on one rank

    def buffers(e):
        inputs = formula_inputs(options=MemoryOptions(cp_algorithm="torch-allgather"), activation_bytes=e, cp=32,
                                dp=1, micro_batch=1, global_batch=1, seq_len=262144, zero=3, flash_attention=1)
        return float(config_terms(dims, **inputs)["cp_buffers"])

    assert buffers(2.0) == pytest.approx((2 * 32 + 2) * elements * 2 + 20 * elements)
    assert buffers(4.0) == pytest.approx((2 * 32 + 2) * elements * 4 + 20 * elements)
