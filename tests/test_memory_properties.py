"""Invariants of the memory model (hypothesis)."""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.memory import layer_activation_bytes, memory_report
from distcalc.model.dims import model_dims
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig

FIXTURES = Path(__file__).parent / "fixtures" / "hf"
MODELS = ("llama2-7b", "llama3-8b", "mixtral-8x7b", "megatron-22b")
SETTINGS = settings(max_examples=60, deadline=None)


@st.composite
def configs(draw, *, dp=None):
    """A valid configuration of one of MODELS with at least two layers per stage."""
    name = draw(st.sampled_from(MODELS))
    spec = load_model(name)
    tp = draw(st.sampled_from([1, 2, 4, 8]))
    pp = draw(st.sampled_from([p for p in (1, 2, 4, 8) if spec.num_hidden_layers // p >= 2]))
    vpp = draw(st.sampled_from([1, 2])) if pp > 1 else 1
    dp = dp if dp is not None else draw(st.sampled_from([1, 2, 4, 8]))
    ep = draw(st.sampled_from([e for e in (1, 2, 4, 8) if e <= dp])) if spec.is_moe else 1
    kwargs = dict(
        tp=tp, pp=pp, dp=dp, vpp=vpp, ep=ep,
        sequence_parallel=draw(st.booleans()), recompute=draw(st.sampled_from(["none", "selective", "full"])),
        micro_batch=draw(st.sampled_from([1, 2])),
        seq_len=draw(st.sampled_from([s for s in (1024, 2048, 4096) if s <= spec.max_position_embeddings])),
        flash_attention=draw(st.booleans()), dtype=draw(st.sampled_from(["bf16", "fp8"])),
        schedule="interleaved" if vpp > 1 else draw(st.sampled_from(["1f1b", "gpipe", "zero-bubble"])),
    )
    kwargs["global_batch"] = kwargs["micro_batch"] * 8 * draw(st.sampled_from([1, 4, 16]))
    return name, kwargs


@SETTINGS
@given(configs(), st.sampled_from([0, 1, 2]))
def test_zero_stage_never_increases_memory(case, stage):
    """ZeRO stage k+1 never needs more memory than stage k, on every pipeline stage.

    (Holds for stages of >= 2 layers: ZeRO-3 all-gathers one full layer, which on a one-layer stage with
    DP = 2 really can exceed what sharding saves; the strategy draws >= 2 layers per stage.)"""
    name, kwargs = case
    lower = memory_report(name, ParallelConfig(**kwargs, zero=stage))
    higher = memory_report(name, ParallelConfig(**kwargs, zero=stage + 1))
    for a, b in zip(lower.stages, higher.stages):
        assert b.total_bytes <= a.total_bytes * (1 + 1e-12)


@SETTINGS
@given(configs(dp=1), st.sampled_from([0, 1, 2, 3]), st.sampled_from([(1, 2), (2, 4), (1, 8), (4, 8)]))
def test_memory_never_grows_with_dp(case, zero, dps):
    """At fixed TP/PP (and global batch), more data parallelism never needs more memory per GPU."""
    name, kwargs = case
    small, large = dps
    kwargs = dict(kwargs, zero=zero)
    if load_model(name).is_moe:
        kwargs["ep"] = 1
    a = memory_report(name, ParallelConfig(**dict(kwargs, dp=small)))
    b = memory_report(name, ParallelConfig(**dict(kwargs, dp=large)))
    assert b.total_bytes <= a.total_bytes * (1 + 1e-12)
    for x, y in zip(a.stages, b.stages):
        assert y.total_bytes <= x.total_bytes * (1 + 1e-12)


@SETTINGS
@given(configs())
def test_recompute_full_le_selective_le_none(case):
    name, kwargs = case
    per_mode = {}
    for mode in ("none", "selective", "full"):
        per_mode[mode] = memory_report(name, ParallelConfig(**dict(kwargs, recompute=mode)))
    for index in range(len(per_mode["none"].stages)):
        none, sel, full = (per_mode[m].stages[index] for m in ("none", "selective", "full"))
        assert full.activations_per_layer_bytes <= sel.activations_per_layer_bytes <= none.activations_per_layer_bytes
        assert full.activations_bytes <= sel.activations_bytes * (1 + 1e-12)
        assert sel.activations_bytes <= none.activations_bytes * (1 + 1e-12)


@settings(max_examples=40, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1024, 8192]), st.sampled_from([1, 4]), st.booleans(),
       st.booleans(), st.sampled_from([0, 1, 2]))
def test_per_layer_recompute_order_elementwise(tp, s, b, sp, flash, model_index):
    """The ordering holds for the raw per-layer formula too (dense and MoE layers)."""
    dims = model_dims(load_model(("gpt3-175b", "llama3-70b", "mixtral-8x7b")[model_index]))
    for moe in (False, True):
        values = [float(layer_activation_bytes(dims, moe, s, b, tp, 1, sp, code, flash)[0]) for code in (0, 1, 2)]
        assert values[2] <= values[1] <= values[0]


PAIRS = [("llama-2-7b.json", "llama2-7b"), ("meta-llama-3-8b.json", "llama3-8b"),
         ("meta-llama-3-70b.json", "llama3-70b"), ("mixtral-8x7b-v0.1.json", "mixtral-8x7b"),
         ("deepseek-v3.json", "deepseek-v3")]


def test_config_json_spec_equals_preset_spec():
    for filename, preset in PAIRS:
        imported = load_model(FIXTURES / filename).model_dump(exclude={"name", "source"})
        assert imported == load_model(preset).model_dump(exclude={"name", "source"}), preset


@SETTINGS
@given(st.sampled_from(PAIRS[:4]), st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]),
       st.sampled_from([0, 1, 2, 3]), st.sampled_from(["none", "selective", "full"]), st.booleans())
def test_config_json_import_equals_preset(pair, tp, pp, zero, recompute, sp):
    """Importing a model's config.json and using its preset give identical memory reports."""
    filename, preset = pair
    config = ParallelConfig(tp=tp, pp=pp, dp=2, zero=zero, recompute=recompute, sequence_parallel=sp, seq_len=4096)
    a = memory_report(load_model(FIXTURES / filename), config, "h100-sxm")
    b = memory_report(preset, config, "h100-sxm")
    assert a.model_dump(exclude={"model_name"}) == b.model_dump(exclude={"model_name"})


from hypothesis import given as _given, strategies as _st  # noqa: E402

from distcalc.parallel import stage_layer_count as _stage_layer_count  # noqa: E402


@_given(_st.integers(2, 64), _st.integers(0, 8), _st.integers(0, 8), _st.integers(1, 8))
def test_uneven_ends_hold_every_layer_once(pp, first, last, per_stage):
    """Uneven ends: the stages' layer counts add up to L (and every stage holds at least one layer)."""
    given = int(first > 0) + int(last > 0)
    layers = first + last + per_stage * (pp - given)
    counts = [float(_stage_layer_count(layers, s, pp, 0, first, last)) for s in range(pp)]
    assert sum(counts) == layers and min(counts) >= 1


@SETTINGS
@given(configs(), st.sampled_from([0, 1, 2, 3]), st.sampled_from([0.0, 2.0, 6.0, 12.0]),
       st.sampled_from([0, 10**8, 10**9]))
def test_optimizer_step_buffers_keep_the_bases_ordered_and_shrink_with_sharding(case, zero, per_param, bucket):
    """The optimizer step's tensors (MemoryOptions.step_*) are never negative, add to the total, keep allocated
    <= reserved <= device on every stage, and per optimizer-shard parameter shrink as ZeRO shards more."""
    from distcalc.memory import MemoryBasis, MemoryOptions

    name, kwargs = case
    config = ParallelConfig(**kwargs, zero=zero)
    options = MemoryOptions(step_buffer_bytes_per_parameter=per_param, step_bucket_bytes=bucket)
    plain, stepped = memory_report(name, config), memory_report(name, config, options=options)
    for a, b in zip(plain.stages, stepped.stages):
        assert b.optimizer_step_buffers_bytes >= bucket
        assert b.total_bytes == a.total_bytes + b.optimizer_step_buffers_bytes
        allocated, reserved = b.peak_bytes(MemoryBasis.ALLOCATED), b.peak_bytes(MemoryBasis.RESERVED)
        assert 0 < allocated <= reserved * (1 + 1e-12) and reserved <= b.peak_bytes(MemoryBasis.DEVICE)
        assert allocated >= a.peak_bytes(MemoryBasis.ALLOCATED) * (1 - 1e-12)
    if zero >= 1 and kwargs["dp"] > 1 and per_param > 0:
        unsharded = memory_report(name, ParallelConfig(**kwargs, zero=0), options=options)
        for a, b in zip(unsharded.stages, stepped.stages):
            assert b.optimizer_step_buffers_bytes < a.optimizer_step_buffers_bytes
