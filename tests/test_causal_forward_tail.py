"""The causal forward kernel's thread-block tail (distcalc.compute.attention.causal_forward_tail) against
distcalc's own H100/H200 cuDNN attention measurements (``validate --set gpu-kernels``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from distcalc.compute.attention import causal_forward_tail, flash_attention_times
from distcalc.compute.device import load_device
from distcalc.validation.base import read_validation_csv
from distcalc.validation.gpu_kernels import CSV


def test_tail_is_one_average_block_per_sm() -> None:
    # 8 heads x 2048 tokens: 8 x 16 = 128 blocks of 128 query rows on 132 SMs
    assert causal_forward_tail(132, 8, 2048) == 1.0 + 132 / 128
    # the tile count rounds up: 2049 tokens need 17 tiles per head
    assert causal_forward_tail(132, 8, 2049) == 1.0 + 132 / (8 * 17)


@given(st.integers(1, 4096), st.integers(1, 1 << 17), st.sampled_from([108, 132, 148]))
def test_tail_bounded_and_shrinks_with_blocks(heads: int, seq: int, sms: int) -> None:
    tail = causal_forward_tail(sms, heads, seq)
    assert 1.0 < tail <= 1.0 + sms
    assert causal_forward_tail(sms, 2 * heads, seq) < tail


def test_noncausal_has_no_tail() -> None:
    h100 = load_device("h100-sxm", "bf16")
    full, _ = flash_attention_times(h100, 8, 2048, 4096, 128, 128, causal=False)
    flops = 4.0 * 8 * 2048 * 4096 * 128
    assert abs(full - (flops / (h100.peak_flops_per_s * h100.flash_forward_efficiency) + h100.kernel_overhead_s)) < 1e-12


def test_causal_forward_matches_measured_cudnn_kernels() -> None:
    """All 12 causal cuDNN forward kernels measured (H100, H200; 8/16 heads; 2048/4096/8192 tokens) within
    20 %, mean |error| under 8 %; without the tail the 2048-token cases were 37-55 % too fast."""
    errors = []
    for row in read_validation_csv(CSV):
        if row["kind"] == "attention" and row["backend"] == "cudnn" and row["causal"] == "1" \
                and row["op"] == "forward":
            device = load_device(row["gpu"], "bf16")
            fwd, _ = flash_attention_times(device, int(row["heads"]), int(row["seq"]), int(row["kv_seq"]), 128, 128)
            errors.append(float(fwd) / float(row["time_s"]) - 1.0)
    assert len(errors) == 12
    assert max(abs(e) for e in errors) < 0.20
    assert sum(abs(e) for e in errors) / len(errors) < 0.08
