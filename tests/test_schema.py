"""One schema: each enum has one encoding (its spelling and its integer code, declared together)."""

from __future__ import annotations

import numpy as np
import pytest

from distcalc.parallel import Recompute, Schedule
from distcalc.schedules import BY_CODE, SCHEDULES
from distcalc.search.space import DEFAULT_SCHEDULES, RECOMPUTE_CHOICES, SCHEDULE_CHOICES, config_values


@pytest.mark.parametrize("enum", [Recompute, Schedule])
def test_codes_are_the_indices_of_the_spellings(enum):
    names = enum.names_by_code()
    assert sorted(m.code for m in enum) == list(range(len(enum)))
    for member in enum:
        assert names[member.code] == member.value
        assert enum.from_code(member.code) is member
        assert enum(member.value) is member


def test_search_columns_use_the_enum_codes():
    assert RECOMPUTE_CHOICES == Recompute.names_by_code()
    assert SCHEDULE_CHOICES == Schedule.names_by_code()
    codes = np.array([m.code for m in Schedule])
    assert config_values("schedule", codes) == [m.value for m in Schedule]
    assert config_values("recompute", np.array([2, 0])) == ["full", "none"]


def test_schedule_registry_spells_the_enum():
    assert {name: s.code for name, s in SCHEDULES.items()} == {m.value: m.code for m in Schedule}
    assert set(BY_CODE) == {m.code for m in Schedule}


def test_executed_schedules_are_the_ones_without_a_closed_form():
    executed = {m.value for m in Schedule if Schedule.executed(m.code)}
    assert executed == {"zb-h1", "zb-h2", "zb-v", "dualpipe", "dualpipev"}
    assert set(DEFAULT_SCHEDULES) == {m.value for m in Schedule} - executed
    mask = Schedule.executed(np.array([m.code for m in Schedule]))
    assert mask.tolist() == [m.value in executed for m in Schedule]
