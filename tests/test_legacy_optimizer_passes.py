"""Megatron-LM's own mixed-precision step passes (analyze.optimizer_passes): the fp16 loss scaler's unscale, the fp32
upcast of 16-bit gradients and the data-parallel wrappers' gradient packing, and which published rows run them."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.analyze.optimizer_passes import (GRAD_UPCAST_BYTES, LOSS_SCALER_UNSCALE_BYTES, megatron_step_passes,
                                               step_pass_updates)
from distcalc.software import DataParallelWrapper
from distcalc.validation.published import comparisons
from distcalc.validation.published.stack_kernels import legacy_step_passes


def test_counts_follow_the_code():
    # torch._amp_foreach_non_finite_check_and_unscale_: read + write fp32; main_grad.float(): read 2, write 4
    assert LOSS_SCALER_UNSCALE_BYTES == 4 + 4 and GRAD_UPCAST_BYTES == 2 + 4
    # SC21 fp16 with local DDP and no contiguous buffers: flatten, divide, copy back (three 16-bit passes)
    sc21 = megatron_step_passes(True, 2.0, DataParallelWrapper.LOCAL_COALESCED)
    assert (sc21.optimizer_extra_bytes, sc21.grad_zero_bytes, sc21.grad_dp_pass_bytes) == (14.0, 0.0, 12.0)
    # PyTorch DDP: divide-while-copying into the bucket, copy the reduced bucket back; grads set to None
    torch_ddp = megatron_step_passes(True, 2.0, DataParallelWrapper.TORCH_DDP)
    assert (torch_ddp.optimizer_extra_bytes, torch_ddp.grad_zero_bytes, torch_ddp.grad_dp_pass_bytes) == (14.0, 0.0, 8.0)
    # bf16 with fp32 main_grad buffers (no scaler, .float() is a no-op): zero the fp32 buffer, divide it in place
    bf16 = megatron_step_passes(False, 4.0, DataParallelWrapper.LOCAL_BUFFERS)
    assert (bf16.optimizer_extra_bytes, bf16.grad_zero_bytes, bf16.grad_dp_pass_bytes) == (0.0, 4.0, 8.0)


def test_bad_gradient_size_is_refused_with_the_valid_values():
    with pytest.raises(ValueError, match="grad_bytes 3.0 .*valid: 2 .*4"):
        megatron_step_passes(True, 3.0, DataParallelWrapper.LOCAL_BUFFERS)


LEGACY = [w for w in DataParallelWrapper if w is not DataParallelWrapper.MEGATRON_CORE]


def test_megatron_core_keeps_the_default_pricing_and_has_no_legacy_passes():
    assert step_pass_updates(38.0, True, 2.0, DataParallelWrapper.MEGATRON_CORE) == {}
    assert step_pass_updates(38.0, True, 2.0, DataParallelWrapper.TORCH_DDP) == {
        "optimizer_bytes_per_parameter": 52.0, "grad_buffer_zero_bytes_per_parameter": 0.0,
        "grad_prescale_bytes_per_parameter": 8.0}
    with pytest.raises(ValueError, match="'megatron-core' has no Megatron-LM optimizer passes; valid: local-buffers"):
        megatron_step_passes(True, 2.0, DataParallelWrapper.MEGATRON_CORE)


@given(scaler=st.booleans(), grad_bytes=st.sampled_from([2.0, 4.0]), wrapper=st.sampled_from(LEGACY))
def test_passes_are_non_negative_and_grow_with_the_scaler_and_16_bit_grads(scaler, grad_bytes, wrapper):
    p = megatron_step_passes(scaler, grad_bytes, wrapper)
    assert min(p.optimizer_extra_bytes, p.grad_zero_bytes, p.grad_dp_pass_bytes) >= 0
    assert p.grad_dp_pass_bytes % (2 * grad_bytes) == 0  # whole read + write passes over the gradients
    if scaler:
        assert p.optimizer_extra_bytes >= megatron_step_passes(False, grad_bytes, wrapper).optimizer_extra_bytes + 8
    assert (p.optimizer_extra_bytes - (8 if scaler else 0) == GRAD_UPCAST_BYTES) == (grad_bytes == 2.0)


def _rows(source):
    return [c for c in comparisons() if c.run.source == source and c.inputs is not None]


def test_published_rows_get_the_passes_their_stack_runs():
    nara = {c.run.case_id: c for c in _rows("Narayanan2021_Table1")}
    # --DDP-impl torch (1.7B-18.4B) and local DDP without buffers (39B+), both fp16 with --loss-scale 8192
    torch_row, local_row = nara["nara21_1p7b"], nara["nara21_39p1b"]
    default = AnalyzeOptions()
    for row, dp_pass in ((torch_row, 8.0), (local_row, 12.0)):
        o = row.inputs.options
        assert o.optimizer_bytes_per_parameter == default.optimizer_bytes_per_parameter + 14.0
        assert (o.grad_buffer_zero_bytes_per_parameter, o.grad_prescale_bytes_per_parameter) == (0.0, dp_pass)
    zb = _rows("ZeroBubble_Qi2024_T4")[0].inputs.options  # fp16 main_grad buffers (local DDP)
    assert (zb.optimizer_bytes_per_parameter, zb.grad_buffer_zero_bytes_per_parameter) == (52.0, 2.0)
    # not Megatron-LM's own optimizer: DeepSpeed (BLOOM), PyTorch-native, Megatron-Core stacks
    for source in ("BLOOM_prequel_sweep_2022-02-21", "torchtitan_A100_2024-08", "SimuMax_B200_v1.2_2026"):
        assert legacy_step_passes(_rows(source)[0].run, 2.0) is None


def test_the_passes_lengthen_the_optimizer_step_by_their_bytes():
    """1.7B row (TP 1, PP 1, DP 32, no ZeRO: every rank holds and steps all its gradients): the step passes cost
    what 18 more Adam bytes per parameter cost over the default 38 + 4 (upcast 6 + unscale 8 + PyTorch DDP's bucket
    copies 8, no zeroing: 38 + 22 = 60 B), and more than the default pricing."""
    row = next(c for c in _rows("Narayanan2021_Table1") if c.run.case_id == "nara21_1p7b")
    i = row.inputs
    as_adam = i.options.model_copy(update=dict(optimizer_bytes_per_parameter=38.0 + 4.0 + 18.0,
                                               grad_prescale_bytes_per_parameter=0.0,
                                               grad_buffer_zero_bytes_per_parameter=0.0))
    default = i.options.model_copy(update=dict(optimizer_bytes_per_parameter=38.0, grad_prescale_bytes_per_parameter=0.0,
                                               grad_buffer_zero_bytes_per_parameter=4.0))
    step = {name: analyze(i.spec, i.cluster, i.config, o).time_breakdown["optimizer_s"]
            for name, o in (("mapped", i.options), ("as_adam", as_adam), ("default", default))}
    assert step["mapped"] == pytest.approx(step["as_adam"], rel=1e-9)
    assert step["mapped"] > step["default"] * 1.3  # 60 B against 42 B per parameter, plus fixed launches
