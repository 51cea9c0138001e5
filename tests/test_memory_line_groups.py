"""The grouped memory pass (each line once per distinct value of the fields it reads) gives the worst-stage
totals of the per-row pass bit for bit: whole search spaces of uniform, MoE and mixed dense/MoE models, every
memory option that reaches a line, uneven ends, any subset and order of the rows."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import distcalc.memory.batch as memory_batch_module
from distcalc.memory import MemoryOptions, memory_batch, memory_worst_stage_bytes_batch
from distcalc.memory.line_groups import ACTIVATION_FIELDS, STATE_FIELDS, group_codes, representatives
from distcalc.memory.te_dummy_wgrad import DummyWgrad
from distcalc.model import load_model
from distcalc.parallel import Precision
from distcalc.parallel_batch import BATCH_FIELDS
from distcalc.search import SpaceChoices
from distcalc.search.space import enumerate_space, limits_for_model
from distcalc.zero3_config import DeepSpeedZero3


def _space(model: str, gpus: int, seq_len: int = 4096, global_batch: int = 256, **choices) -> dict:
    spec = load_model(model)
    limits = limits_for_model(spec, seq_len=seq_len, global_batch=global_batch, gpus_per_node=8)
    configs = enumerate_space(limits, gpus, SpaceChoices(**choices)).configs
    return dict(configs, global_batch=global_batch, seq_len=seq_len)


@pytest.fixture(autouse=True)
def _grouped_from_one_row(monkeypatch):
    """Every batch of these tests through the grouped pass (the search's blocks are far above the minimum)."""
    monkeypatch.setattr(memory_batch_module, "GROUPED_MIN_ROWS", 1)


def _assert_same(model: str, batch: dict, **extra) -> None:
    spec = load_model(model)
    grouped = memory_worst_stage_bytes_batch(spec, **batch, **extra)
    direct = memory_batch(spec, **batch, **extra)["total_bytes"]
    assert grouped.shape == direct.shape
    assert np.array_equal(grouped, direct)  # bit for bit, not approximately


@pytest.mark.parametrize("model, gpus", [("gpt3-175b", 64), ("mixtral-8x7b", 64), ("deepseek-v3", 64),
                                         ("llama3-405b", 128)])
def test_search_space_totals_equal_the_per_row_pass(model, gpus):
    _assert_same(model, _space(model, gpus))


@pytest.mark.parametrize("options", [
    MemoryOptions(te_dummy_wgrad=DummyWgrad.LINEAR_AND_GROUPED),
    MemoryOptions(deepspeed_zero3=DeepSpeedZero3()),
    MemoryOptions(zero_shard_size=8, zero3_prefetch_layers=2),
    MemoryOptions(step_buffer_bytes_per_parameter=4.0, step_bucket_bytes=1 << 26, allocator_reserve_fraction=0.1),
    MemoryOptions(attention_score_buffer=True, moe_token_factor=1.5),
])
def test_every_option_equal(options):
    batch = _space("mixtral-8x7b", 32)
    _assert_same("mixtral-8x7b", dict(batch, flash_attention=0), options=options,
                 weight_cache_bytes=Precision.FP8.weight_cache_bytes_per_parameter,
                 activation_bytes=Precision.FP8.activation_bytes)


def test_uneven_ends_equal():
    batch = _space("llama3-8b", 32, first_stage_layers=6, last_stage_layers=6)
    rows = (batch["first_stage_layers"] > 0) | (batch["last_stage_layers"] > 0)  # the search prices them apart
    assert rows.sum() > 100
    _assert_same("llama3-8b", {k: (v[rows] if np.ndim(v) else v) for k, v in batch.items()})


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_any_subset_in_any_order(data):
    model = data.draw(st.sampled_from(["gpt3-175b", "deepseek-v3"]))
    batch = _space(model, 32)
    rows = batch["tp"].shape[0]
    index = np.array(data.draw(st.lists(st.integers(0, rows - 1), min_size=1, max_size=200)))
    _assert_same(model, {k: (v[index] if np.ndim(v) else v) for k, v in batch.items()})


def test_groups_cover_every_field_and_codes_are_exact():
    assert set(STATE_FIELDS) | set(ACTIVATION_FIELDS) == set(BATCH_FIELDS)
    rng = np.random.default_rng(0)
    columns = {"a": rng.integers(0, 5, 1000), "b": rng.integers(0, 3000, 1000) * 7, "c": np.full(1000, 4)}
    code, count = group_codes(columns, ("a", "b", "c"))
    keys = np.stack([columns["a"], columns["b"]], axis=1)
    assert count == len(np.unique(keys, axis=0))
    rep = representatives(code, count)
    assert np.array_equal(keys[rep][code], keys)  # every row's code names a row with its values


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_dedupe_is_unique_of_the_mixed_radix_code(data):
    """dedupe (and key_table) without a sort: the distinct rows, their first rows and the inverse of
    ``np.unique`` of the mixed-radix code (first column the least significant digit), wide and huge columns
    included (a column spanning 2^40 values takes the sort)."""
    from distcalc.analyze.block_rows import dedupe, key_table

    rows = data.draw(st.integers(2, 300))
    spans = data.draw(st.lists(st.sampled_from([1, 2, 3, 7, 64, 65, 4096, 1 << 40]), min_size=1, max_size=6))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    columns = [rng.integers(0, span, rows) * (1 if span > 64 else rng.integers(1, 4)) for span in spans]
    columns = [c.astype(np.int64) for c in columns]
    first, inverse = dedupe(columns)
    lex = np.stack(columns[::-1], axis=1)  # np.unique sorts rows by their first column: the most significant
    _, want_first, want_inverse = np.unique(lex, axis=0, return_index=True, return_inverse=True)
    assert np.array_equal(first, want_first) and np.array_equal(inverse, want_inverse.reshape(-1))
    table, index = key_table({str(i): c for i, c in enumerate(columns)})
    assert all(np.array_equal(table[str(i)][index], c) for i, c in enumerate(columns))
