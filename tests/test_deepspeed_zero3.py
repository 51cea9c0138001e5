"""DeepSpeed ZeRO-3 as DeepSpeed runs it (distcalc.deepspeed_zero3, distcalc.analyze.deepspeed_zero3):
release policy, buckets, exposure, memory buffers, the overlaps line and the CLI."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.analyze.deepspeed_zero3 import deepspeed_zero3_exposure
from distcalc.cli import app
from distcalc.deepspeed_zero3 import (DeepSpeedZero3, block_persistent_elements, embedding_kept, kept_block_elements,
                                      last_bucket_elements, live_gathered_elements)
from distcalc.analyze.report import _dims
from distcalc.memory import MemoryOptions, memory_report
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig

times = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
elements = st.floats(min_value=0.0, max_value=1e10, allow_nan=False)
# Llama 2 7B, ZeRO-3 over 8 nodes of 8 H100, batch 2 x 4096 per GPU
CONFIG = ParallelConfig(gpus=64, dp=64, zero=3, micro_batch=2, global_batch=512, seq_len=4096)
# Llama 2 7B on one rank (tp = 1): a block's projections 4·4096² + 3·4096·11008, two RMSNorm weights of 4096;
# output layer 32000·4096 and the final norm's 4096
BLOCK = 4 * 4096**2 + 3 * 4096 * 11008
HEAD = 32000 * 4096


def exposure(u=4, f=1.0, b=2.0, g=1.5, g_b=0.5, g_e=0.3, g_h=0.2, r=0.4, r_last=0.25, kept=1.0, embed_kept=0.0,
             overlap=True, slowdown=0.0, prefetch=1.0):
    return deepspeed_zero3_exposure(u, f, b, g, g_b, g_e, g_h, r, r_last, kept, embed_kept, overlap, slowdown,
                                    prefetch)


def test_worked_example_by_hand():
    """U = 4 blocks, f = 1, b = 2, g = 1.5, first prefetch 0.5, embedding 0.3, output layer 0.2, r = 0.4,
    last bucket 0.25, one block kept, embedding released.
    forward: 0.3 + 0.5 + max(0, 1.5 - 0.5 - 1) + max(0, 0.2 - 1) + 3·max(0, 1.5 - 1) = 2.3;
    backward (overlap_comm): 1·max(0, 0.4 - 2) + 3·max(0, 1.9 - 2) + max(0, 0.3 - (2 - 1.9)) + 0.25 = 0.45;
    without overlap_comm: 3·max(0, 1.5 - 2) + 0.3 + 4·0.4 + 0.25 = 2.15;
    contention at 20 %: forward 0.2·4·min(1, 1.5) = 0.8, backward 0.2·(min(2, 0.4) + 3·min(2, 1.9)) = 1.22."""
    e = exposure()
    assert float(e.forward_exposed_s) == pytest.approx(2.3)
    assert float(e.backward_exposed_s) == pytest.approx(0.45)
    assert float(exposure(overlap=False).backward_exposed_s) == pytest.approx(2.15)
    # nothing prefetched (stage3_max_live_parameters 0): forward 0.3 + 4·1.5 + 0.2 = 6.5; backward
    # 3·1.5 + 0.3 + 4·max(0, 0.4 - 2) + 0.25 = 5.05
    none = exposure(prefetch=0.0)
    assert float(none.forward_exposed_s) == pytest.approx(6.5)
    assert float(none.backward_exposed_s) == pytest.approx(5.05)
    c = exposure(slowdown=0.2)
    assert float(c.contention_forward_s) == pytest.approx(0.8)
    assert float(c.contention_backward_s) == pytest.approx(1.22)


def test_llama2_7b_kept_blocks_by_hand():
    """With the default stage3_max_reuse_distance 1e9 a parameter stays gathered when twice the elements after
    it in the forward are under 1e9: the output layer and final norm (32000·4096 + 4096) and the last
    5e8 − 131 076 096 = 368 923 904 block elements, 1.823 of Llama 2 7B's gathered blocks (202 375 168
    elements: the norms stay whole); the embedding (all 6.7e9 elements after it) is released."""
    spec = load_model("llama2-7b")
    d = _dims(spec)
    persistent = float(block_persistent_elements(d, 1, 100_000))
    assert persistent == 2 * 4096
    unit = BLOCK  # gathered elements of one block
    tail = HEAD + 4096
    kept = float(kept_block_elements(32, unit, tail, 1e9))
    assert kept == pytest.approx(5e8 - tail) and kept / unit == pytest.approx(1.8229, abs=1e-4)
    assert float(embedding_kept(32, unit, tail, 1e9)) == 0.0
    assert float(embedding_kept(32, unit, tail, 2 * (32 * unit + tail) + 1)) == 1.0


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 96.0), st.floats(1.0, 1e9), elements, elements, elements)
def test_kept_elements_bounded_and_monotone(units, unit, tail, d1, d2):
    """Kept elements lie in [0, all block elements] and never shrink with a longer reuse distance."""
    lo, hi = sorted((d1, d2))
    k_lo, k_hi = (float(kept_block_elements(units, unit, tail, d)) for d in (lo, hi))
    assert 0.0 <= k_lo <= k_hi <= units * unit * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(st.floats(1.0, 1e11), st.integers(1, 10**9))
def test_last_bucket_is_the_remainder(total, bucket):
    """The last bucket holds what is left after whole buckets: in (0, bucket], and the rest is whole buckets."""
    last = float(last_bucket_elements(total, bucket))
    assert 0.0 < last <= min(bucket, total) * (1 + 1e-12)
    full = (total - last) / bucket
    assert full == pytest.approx(round(full), abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 96), times, times, times, times, times, times, times, times, st.floats(0.0, 96.0),
       st.sampled_from([0.0, 1.0]), st.floats(0.0, 0.5))
def test_exposure_invariants(u, f, b, g, g_b, g_e, g_h, r, r_last, kept, embed, slowdown):
    """Finite and non-negative; overlap_comm never exposes more than reducing on the compute stream; keeping
    more blocks gathered never exposes more in backward; the embedding's gather and the last bucket are
    always exposed."""
    args = dict(u=u, f=f, b=b, g=g, g_b=g_b, g_e=g_e, g_h=g_h, r=r, r_last=r_last, embed_kept=embed,
                slowdown=slowdown)
    on = exposure(kept=kept, **args)
    off = exposure(kept=kept, overlap=False, **args)
    more = exposure(kept=min(kept + 1.0, u), **args)
    none = exposure(kept=kept, prefetch=0.0, **args)
    for e in (on, off, more, none):
        for x in (e.forward_exposed_s, e.backward_exposed_s, e.contention_forward_s, e.contention_backward_s):
            assert 0.0 <= float(x) < float("inf")
    assert float(on.backward_exposed_s) <= float(off.backward_exposed_s) + 1e-12
    assert float(more.backward_exposed_s) <= float(on.backward_exposed_s) + 1e-12
    assert float(on.forward_exposed_s) >= g_e + min(g_b, g) - 1e-12
    assert float(on.backward_exposed_s) >= r_last - 1e-12
    assert float(none.forward_exposed_s) >= float(on.forward_exposed_s) - 1e-12
    assert float(none.backward_exposed_s) >= float(on.backward_exposed_s) - 1e-12


@settings(max_examples=100, deadline=None)
@given(st.floats(1.0, 1e10), st.floats(1.0, 1e9), elements, elements, st.integers(0, 10**10))
def test_live_gathered_bounds(total, unit, kept, tail, max_live):
    """Never more than the rank's gathered elements; at least the bound where the rank has that many."""
    live = float(live_gathered_elements(total, unit, kept, tail, max_live))
    assert live <= total * (1 + 1e-12)
    assert live >= min(total, max_live) * (1 - 1e-12)


def test_memory_buffers_by_hand():
    """Llama 2 7B, dp 64: FSDP holds one gathered block (202 383 360 · 2 B); DeepSpeed holds
    stage3_max_live_parameters (1e9 · 2 B: more than the 7.0e8 kept + output layer + current block), the IPG
    bucket and one flattened ReduceScatter bucket (5e8 · 2 B each) and the persistent norms (32 · 8192 + 4096
    elements · 2 B)."""
    spec = load_model("llama2-7b")
    fsdp = memory_report(spec, CONFIG, "h100-sxm")
    ds = memory_report(spec, CONFIG, "h100-sxm", MemoryOptions(deepspeed_zero3=DeepSpeedZero3()))
    extra = ds.worst.communication_buffers_bytes - fsdp.worst.communication_buffers_bytes
    assert extra == pytest.approx((1e9 + 5e8 + 5e8 + 32 * 8192 + 4096) * 2 - (BLOCK + 2 * 4096) * 2)
    small = memory_report(spec, CONFIG, "h100-sxm", MemoryOptions(deepspeed_zero3=DeepSpeedZero3(
        max_live_parameters=100_000_000, contiguous_gradients=False)))
    assert small.worst.communication_buffers_bytes < ds.worst.communication_buffers_bytes
    not_z3 = ParallelConfig(gpus=64, dp=64, zero=1, micro_batch=2, global_batch=512, seq_len=4096)
    assert (memory_report(spec, not_z3, "h100-sxm", MemoryOptions(deepspeed_zero3=DeepSpeedZero3())).total_bytes
            == memory_report(spec, not_z3, "h100-sxm").total_bytes)


def test_analyze_reuse_distance_and_overlaps_line():
    """Keeping every parameter gathered (a reuse distance over twice the model) removes the backward regathers;
    releasing everything (0) adds them; the overlaps line names DeepSpeed's policy and sizes."""
    spec = load_model("llama2-7b")
    run = lambda cfg: analyze(spec, "dgx-h100", CONFIG, AnalyzeOptions(  # noqa: E731
        grad_reduce_bytes=2, deepspeed_zero3=cfg))
    default, keep, drop = (run(DeepSpeedZero3(max_reuse_distance_elements=d)) for d in (10**9, 10**11, 0))
    dp = lambda rep: rep.time_breakdown["dp_exposed_s"]  # noqa: E731
    assert dp(keep) < dp(default) < dp(drop)
    line = next(o for o in default.overlaps if o["dim"] == "dp")
    assert "DeepSpeed ZeRO-3" in line["collectives"] and "stage3_max_reuse_distance=1e+09" in line["collectives"]
    assert "1.82 blocks" in line["reason"]
    # the backward AllGather carries only what the forward released: all but 368 923 904 block elements and
    # the output layer's 131 072 000 (the norms are in the whole-model message but never gathered)
    size = {m["phase"]: m["size_bytes"] for m in default.communication if m["note"].startswith("ZeRO-3 parameter")}
    gathered = 32 * BLOCK + 2 * HEAD
    assert size["backward"] == pytest.approx(size["forward"] * (gathered - (5e8 - HEAD - 4096) - HEAD) / gathered)
    fsdp = analyze(spec, "dgx-h100", CONFIG, AnalyzeOptions(grad_reduce_bytes=2))
    assert "DeepSpeed" not in next(o for o in fsdp.overlaps if o["dim"] == "dp")["collectives"]


def test_no_prefetch_when_max_live_is_zero():
    """stage3_max_live_parameters 0: fetch_sub_module prefetches nothing, so the gathers are exposed."""
    spec = load_model("llama2-7b")
    run = lambda cfg: analyze(spec, "dgx-h100", CONFIG, AnalyzeOptions(  # noqa: E731
        grad_reduce_bytes=2, deepspeed_zero3=cfg))
    default, zero = run(DeepSpeedZero3()), run(DeepSpeedZero3(max_live_parameters=0))
    assert zero.time_breakdown["dp_exposed_s"] > default.time_breakdown["dp_exposed_s"]
    assert "nothing prefetched" in next(o for o in zero.overlaps if o["dim"] == "dp")["hidden_behind"]


def test_cli_rejects_pipeline_parallelism_and_runs():
    runner = CliRunner()
    args = ["--model", "llama2-7b", "--gpus", "64", "--zero", "3", "--micro-batch", "2", "--global-batch", "512",
            "--seq-len", "4096", "--zero3-impl", "deepspeed"]
    bad = runner.invoke(app, ["analyze", *args, "--pp", "2"])
    assert bad.exit_code == 2
    assert "error: --zero3-impl deepspeed needs pp=1 (pp=2)" in bad.output
    ok = runner.invoke(app, ["analyze", *args, "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.output)["time_breakdown"]["dp_exposed_s"] > 0
    mem = runner.invoke(app, ["memory", *args, "--ds-max-live-parameters", "1e8", "--json"])
    assert mem.exit_code == 0, mem.output
