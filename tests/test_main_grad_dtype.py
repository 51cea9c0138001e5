"""Weight-gradient GEMMs accumulate into a main_grad buffer of the run's dtype: fp32 (8 B read + write per
element) or fp16 (4 B; Megatron-LM fp16 without --accumulate-allreduce-grads-in-fp32)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.compute import load_device, model_dims
from distcalc.compute.device import gemm_time_s, main_grad_device
from distcalc.compute.layer import WGRAD_ACCUMULATE_BYTES, head_times, layer_times
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig
from distcalc.software import MainGradDtype
from distcalc.validation.published import comparisons
from distcalc.validation.published.stack_kernels import main_grad_dtype


def test_bytes_per_element_and_default():
    assert MainGradDtype.FP32.bytes_per_element == 4.0
    assert MainGradDtype.FP16.bytes_per_element == 2.0
    device = load_device("a100-80gb", "fp16")
    assert device.wgrad_accumulate_bytes == WGRAD_ACCUMULATE_BYTES == 8.0
    assert main_grad_device(device, MainGradDtype.FP32) is device
    assert main_grad_device(device, MainGradDtype.FP16).wgrad_accumulate_bytes == 4.0


def test_fp8_twin_follows():
    device = main_grad_device(load_device("h100-sxm", "fp8"), MainGradDtype.FP16)
    assert device.attention is not None and device.attention.wgrad_accumulate_bytes == 4.0


def test_fp16_main_grad_changes_only_the_weight_gradient_epilogue():
    """The layer's wgrad GEMMs lose exactly the epilogue bytes of one 16-bit read + write less per element."""
    dims = model_dims(load_model("gpt3-175b"))
    fp32 = load_device("a100-80gb", "fp16")
    fp16 = main_grad_device(fp32, MainGradDtype.FP16)
    b, s, t = 1, 1024, 8
    a, c = layer_times(dims, fp32, b, s, t), layer_times(dims, fp16, b, s, t)
    assert float(c.forward_s) == float(a.forward_s)
    assert float(c.backward_dgrad_s) == float(a.backward_dgrad_s)
    tokens = b * s
    shapes = [(tokens, dims.qkv_width / t, dims.hidden), (tokens, dims.hidden, dims.hidden / t),
              (tokens, dims.ffn / t, dims.hidden), (tokens, dims.hidden, dims.ffn / t)]
    expected = sum(gemm_time_s(1, k, n, m, fp32, out_bytes=8.0) - gemm_time_s(1, k, n, m, fp32, out_bytes=4.0)
                   for m, n, k in shapes)
    assert float(a.backward_wgrad_s - c.backward_wgrad_s) == pytest.approx(float(expected), rel=1e-9)
    assert float(head_times(dims, fp16, b, s, t).output_wgrad_s) < float(head_times(dims, fp32, b, s, t).output_wgrad_s)


@settings(max_examples=40, deadline=None)
@given(b=st.integers(1, 16), t=st.sampled_from([1, 2, 4, 8]))
def test_fp16_main_grad_never_slower(b, t):
    dims = model_dims(load_model("gpt3-175b"))
    fp32 = load_device("a100-80gb", "fp16")
    a = layer_times(dims, fp32, b, 2048, t)
    c = layer_times(dims, main_grad_device(fp32, MainGradDtype.FP16), b, 2048, t)
    assert 0.0 < float(c.backward_wgrad_s) <= float(a.backward_wgrad_s)


def test_step_option_and_report():
    config = ParallelConfig(gpus=8, tp=8, micro_batch=1, global_batch=8, seq_len=2048, dtype="fp16")
    fp32 = analyze("megatron-22b", "dgx-a100", config)
    fp16 = analyze("megatron-22b", "dgx-a100", config, AnalyzeOptions(main_grad_dtype=MainGradDtype.FP16))
    assert fp16.step_time_s < fp32.step_time_s
    assert fp16.options["main_grad_dtype"] == "fp16" and fp32.options["main_grad_dtype"] == "fp32"


def test_published_mapping():
    """Zero Bubble fork rows (fp16, local DDP, no fp32-accumulation flag) get fp16; Narayanan 2021 (SC21 code or
    PyTorch DDP), bf16 and TransformerEngine stacks keep fp32."""
    by_source: dict[str, set[MainGradDtype]] = {}
    for c in comparisons():
        by_source.setdefault(c.run.source, set()).add(main_grad_dtype(c.run))
        if c.inputs is not None:
            assert c.inputs.options.main_grad_dtype is main_grad_dtype(c.run)
    assert by_source.pop("ZeroBubble_Qi2024_T4") == {MainGradDtype.FP16}
    assert all(kinds == {MainGradDtype.FP32} for kinds in by_source.values()), by_source


def test_memory_fp16_main_grad_is_two_bytes_without_deepspeed_step_buffers():
    from distcalc.memory import Recipe
    from distcalc.memory.stacks import stack_memory_options

    plain, fp16 = stack_memory_options(), stack_memory_options(sixteen_bit_main_grad=True)
    assert plain.recipe is Recipe.MIXED
    assert fp16.recipe is Recipe.MIXED_16BIT_GRADS
    assert fp16.step_buffer_bytes_per_parameter == 0.0 and fp16.step_bucket_bytes == 0
    # DeepSpeed's own recipes are not touched
    ds = stack_memory_options(deepspeed_zero=True, fp32_grad_accumulation=True, sixteen_bit_main_grad=True)
    assert ds.recipe is Recipe.DEEPSPEED_BF16


def test_zero_bubble_rows_memory_recipe():
    from distcalc.memory import Recipe

    for c in comparisons():
        if c.inputs is None:
            continue
        run = c.run
        sixteen = c.inputs.memory_options.recipe is Recipe.MIXED_16BIT_GRADS
        if run.source == "ZeroBubble_Qi2024_T4":
            assert sixteen
        elif "DeepSpeed" not in run.framework and "Megatron-Bridge" not in run.framework:  # their own 16-bit grads
            assert not sixteen, run.case_id
