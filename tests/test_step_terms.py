"""The step model's typed records: ByStage picks the slowest stage's term, gather takes a record of union-row
arrays at each configuration's row (analyze.terms, analyze.gather)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from distcalc.analyze.gather import gather, take_rows
from distcalc.analyze.terms import ByStage, DpCollectives, StagePosition

rows = st.integers(min_value=1, max_value=12)


@given(rows.flatmap(lambda n: st.tuples(
    st.lists(st.floats(-1e6, 1e6), min_size=3 * n, max_size=3 * n),
    st.lists(st.sampled_from(list(StagePosition)), min_size=n, max_size=n))))
def test_by_stage_choose_is_the_named_position(case):
    values, positions = case
    n = len(positions)
    first, middle, last = (np.array(values[i * n:(i + 1) * n]) for i in range(3))
    chosen = ByStage(first, middle, last).choose(np.array(positions, dtype=np.int64))
    named = {StagePosition.FIRST: first, StagePosition.MIDDLE: middle, StagePosition.LAST: last}
    assert [float(x) for x in chosen] == [float(named[p][i]) for i, p in enumerate(positions)]


def test_by_stage_choose_scalar_position():
    stages = ByStage(np.array([1.0]), np.array([2.0]), np.array([3.0]))
    assert stages.choose(StagePosition.MIDDLE).tolist() == [2.0]
    assert stages.choose(StagePosition.LAST).tolist() == [3.0]


@dataclass(frozen=True)
class _Record:
    a_s: Any
    nested: DpCollectives
    table: dict


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=8).flatmap(
    lambda v: st.tuples(st.just(v), st.lists(st.integers(0, len(v) - 1), min_size=1, max_size=20))))
def test_gather_takes_every_field_at_the_row(case):
    values, index = case
    x = np.array(values)
    idx = np.array(index, dtype=np.int64)
    record = _Record(x, DpCollectives(x, 2 * x, 3 * x, 4 * x, 5 * x), {})
    rows_view = gather(record, idx)
    assert rows_view.a_s.tolist() == x[idx].tolist() == take_rows(x, idx).tolist()
    assert rows_view.nested.zero3_backward_gather_s.tolist() == (5 * x)[idx].tolist()


def test_gather_refuses_what_is_not_per_row():
    record = _Record(np.zeros(2), DpCollectives(*(np.zeros(2),) * 5), {"k": 1})
    with pytest.raises(TypeError, match="_Record.table is not a per-row array"):
        gather(record, np.zeros(3, dtype=np.int64)).table
    with pytest.raises(TypeError, match="dataclass"):
        gather({"a": np.zeros(2)}, np.zeros(1, dtype=np.int64))
