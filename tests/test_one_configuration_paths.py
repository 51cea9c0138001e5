"""The shortcuts that one configuration (``analyze``) takes give, bit for bit, what the batch form gives that
configuration's row: key_table and run_block of one row, slowest_gpu_factor of one GPU count, the attention
core priced without the context-parallel kernels no row runs, and the remembered GEMM times."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.analyze.block_rows import key_table, run_block
from distcalc.analyze.block_terms import kept
from distcalc.cluster import load_cluster
from distcalc.compute import model_dims
from distcalc.compute.attention import CpSplit
from distcalc.compute.device import gemm_time_s, load_device
from distcalc.compute.layer import layer_times
from distcalc.model import load_model
from distcalc.variability import slowest_gpu_factor

small = st.integers(min_value=0, max_value=9)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(small, small, small), min_size=2, max_size=6), st.data())
def test_key_table_of_one_row_is_that_row(rows, data):
    i = data.draw(st.integers(min_value=0, max_value=len(rows) - 1))
    columns = {name: np.array([row[j] for row in rows], dtype=np.int64) for j, name in enumerate("abc")}
    table, inverse = key_table(columns)
    one, one_inverse = key_table({name: column[i:i + 1] for name, column in columns.items()})
    assert one_inverse.tolist() == [0] and one_inverse.dtype == inverse.dtype
    for name in columns:
        assert one[name].dtype == np.int64 and one[name].tolist() == [table[name][inverse[i]]]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(small, small), min_size=2, max_size=5), st.data())
def test_run_block_of_one_configuration_is_its_row_of_a_batch(rows, data):
    i = data.draw(st.integers(min_value=0, max_value=len(rows) - 1))
    c = {"x": np.array([r[0] for r in rows], dtype=np.int64), "y": np.array([r[1] for r in rows], dtype=np.int64)}

    def block(sub):
        return _Terms(sum=sub["x"] + 0.5 * sub["y"], ratio=sub["y"] / (sub["x"] + 1.0), constant=2.0,
                      inner=_Inner(sub["y"] * 3.0), absent=None, note=["kept as it is"])

    batch = run_block(block, ("x", "y"), c, (len(rows),))
    one = run_block(block, ("x", "y"), {k: v[i:i + 1] for k, v in c.items()}, (1,))
    assert one.note == ["kept as it is"] and batch.note == ["kept as it is"]
    assert one.absent is None and batch.absent is None
    for name in ("sum", "ratio", "constant"):
        assert getattr(one, name).shape == (1,) and getattr(one, name).dtype == np.float64
        assert getattr(batch, name).shape == (len(rows),)
        assert getattr(one, name)[0] == getattr(batch, name)[i]
    assert one.inner.tripled.shape == (1,) and one.inner.tripled[0] == batch.inner.tripled[i] == 3.0 * rows[i][1]


@dataclass(frozen=True, slots=True)
class _Inner:
    tripled: Any


@dataclass(frozen=True, slots=True)
class _Terms:
    """A block's record: per-row arrays, a scalar, a nested record, an absent one and a passed-through list."""

    sum: Any
    ratio: Any
    constant: Any
    inner: _Inner
    absent: _Inner | None
    note: list = kept()


@settings(deadline=None)  # the first call builds a 24,001-point integration grid: slow on a loaded machine
@given(st.integers(min_value=1, max_value=1 << 20), st.sampled_from([0.0, 0.01, 0.05]))
def test_slowest_gpu_factor_of_one_count_is_its_entry_in_a_batch(gpus, cv):
    batch = slowest_gpu_factor(np.array([1, gpus, 8]), cv)
    for one in (np.array([gpus]), gpus):
        value = slowest_gpu_factor(one, cv)
        assert np.shape(value) == np.shape(one) and float(np.ravel(value)[0]) == batch[1]


def test_attention_without_a_context_parallel_row_prices_the_same():
    """A batch where no row runs ring or all-gather attention skips those kernels: every row still equals the
    batch that also holds a row running them."""
    dims = model_dims(load_model("llama3-8b"))
    device = load_device("h100-sxm", "bf16")
    for split in (CpSplit.RING, CpSplit.ALLGATHER, CpSplit.NONE):
        mixed = layer_times(dims, device, 1, 8192, np.array([1, 2, 4]), cp=np.array([1, 1, 2]), flash_attention=1,
                            cp_split=split)
        for tp in (1, 2):
            alone = layer_times(dims, device, 1, 8192, np.array([tp]), cp=np.array([1]), flash_attention=1,
                                cp_split=split)
            row = tp - 1
            assert alone.forward_s[0] == mixed.forward_s[row] and alone.backward_s[0] == mixed.backward_s[row]


def test_remembered_gemm_time_keeps_int_and_float_problems_apart():
    device = load_device("h100-sxm", "bf16")
    for m in (4096, 4096.0, 4096 / 3):
        first, again = gemm_time_s(1, m, 8192, 1024, device), gemm_time_s(1, m, 8192, 1024, device)
        batch = gemm_time_s(1, np.array([m, 1.0]), 8192, 1024, device)
        assert float(first) == float(again) == batch[0]


def test_a_cluster_preset_is_built_once():
    assert load_cluster("dgx-h100") is load_cluster("dgx-h100")
    assert load_cluster("dgx-h100", gpus_per_node=4) is not load_cluster("dgx-h100")
