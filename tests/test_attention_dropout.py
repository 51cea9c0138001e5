"""In-kernel attention dropout (distcalc.compute.attention): measured overheads and where they apply."""

from __future__ import annotations

from dataclasses import replace

import pytest

from distcalc.compute.attention import (
    CUDNN_SM100_DROPOUT_OVERHEAD,
    CUDNN_SM90_DROPOUT_OVERHEAD,
    FLASH2_DROPOUT_OVERHEAD,
    AttentionKernel,
    attention_dropout_overhead,
    attention_kernel_device,
)
from distcalc.compute.device import compute_preset_names, load_device
from distcalc.errors import ConfigError
from distcalc.compute.layer import layer_times
from distcalc.model import load_model
from distcalc.model.dims import model_dims


def test_overheads_are_the_published_timings():
    # TransformerEngine #3312 (sbhd, p = 0.1): H200 cuDNN 0.594 -> 0.614 ms, B300 0.480 -> 0.525 ms;
    # PR #3313: FlashAttention-2 0.695 -> 0.728 ms
    assert CUDNN_SM90_DROPOUT_OVERHEAD == pytest.approx(0.0337, abs=1e-4)
    assert CUDNN_SM100_DROPOUT_OVERHEAD == pytest.approx(0.09375)
    assert FLASH2_DROPOUT_OVERHEAD == pytest.approx(0.0475, abs=1e-4)


def test_each_gpu_takes_the_kernel_its_stack_runs():
    assert attention_dropout_overhead(load_device("a800-80gb")) == FLASH2_DROPOUT_OVERHEAD
    assert attention_dropout_overhead(load_device("h100-sxm")) == CUDNN_SM90_DROPOUT_OVERHEAD
    assert attention_dropout_overhead(load_device("b200")) == CUDNN_SM100_DROPOUT_OVERHEAD
    flash2 = attention_kernel_device(load_device("h100-sxm"), AttentionKernel.FLASH2)
    assert attention_dropout_overhead(flash2) == FLASH2_DROPOUT_OVERHEAD
    assert attention_dropout_overhead(load_device("h100-sxm", "fp8").attention) == CUDNN_SM90_DROPOUT_OVERHEAD


@pytest.mark.parametrize("flash", [1, 0])
def test_dropout_slows_only_the_fused_kernel_by_its_overhead(flash):
    spec = load_model("llama3-8b")
    dry = model_dims(spec)
    wet = model_dims(spec.model_copy(update={"attention_dropout": 0.1}))
    device = load_device("h100-sxm")
    a = layer_times(dry, device, 1, 8192, 2, flash_attention=flash)
    b = layer_times(wet, device, 1, 8192, 2, flash_attention=flash)
    if flash:
        assert b.forward_attention_s == pytest.approx(a.forward_attention_s * (1 + CUDNN_SM90_DROPOUT_OVERHEAD))
        assert b.forward_gemm_s == a.forward_gemm_s
    else:  # the unfused path prices its dropout kernel by bytes already
        assert b.forward_attention_s > a.forward_attention_s


def test_a_device_without_a_measurement_adds_nothing():
    assert attention_dropout_overhead(replace(load_device("h100-sxm"), name="unknown-gpu")) == 0.0


def test_every_gpu_preset_names_the_kernel_its_stack_runs():
    # the per-GPU table that lived in compute/attention.py before it became the compute.yaml field
    # attention_dropout_kernel: sm80 FlashAttention-2, Hopper cuDNN sm90, Blackwell cuDNN sm100, TPU none
    expected = {"a100-80gb": FLASH2_DROPOUT_OVERHEAD, "a100-40gb": FLASH2_DROPOUT_OVERHEAD,
                "a800-80gb": FLASH2_DROPOUT_OVERHEAD, "h100-sxm": CUDNN_SM90_DROPOUT_OVERHEAD,
                "h200": CUDNN_SM90_DROPOUT_OVERHEAD, "h800": CUDNN_SM90_DROPOUT_OVERHEAD,
                "h100-pcie": CUDNN_SM90_DROPOUT_OVERHEAD, "h100-nvl": CUDNN_SM90_DROPOUT_OVERHEAD,
                "b200": CUDNN_SM100_DROPOUT_OVERHEAD, "gb200": CUDNN_SM100_DROPOUT_OVERHEAD,
                "gb300": CUDNN_SM100_DROPOUT_OVERHEAD, "tpu-v5p": 0.0}
    assert set(expected) == set(compute_preset_names())
    assert {name: attention_dropout_overhead(load_device(name)) for name in expected} == expected


def test_a_preset_naming_an_unmeasured_kernel_is_refused(monkeypatch):
    import distcalc.compute.device as device_module

    real = device_module.compute_preset_entry
    monkeypatch.setattr(device_module, "compute_preset_entry",
                        lambda name: {**real(name), "attention_dropout_kernel": "flash3"})
    with pytest.raises(ConfigError, match="attention_dropout_kernel 'flash3' is not valid; valid: flash2, cudnn-sm90, "
                                          "cudnn-sm100"):
        load_device("h100-sxm")
