"""memory.activations.executed_in_flight: one gather from a table of every plan's per-stage counts gives each
row its own plan's count (what peak_in_flight_counts says for that schedule, pp, m and stage), 0 where the
schedule has a closed form."""

import numpy as np
import pytest

from distcalc.memory.activations import executed_in_flight
from distcalc.parallel import Schedule
from distcalc.schedules import peak_in_flight_counts


def _rows(seed: int, size: int):
    rng = np.random.default_rng(seed)
    codes = np.array([s.code for s in Schedule])
    schedule = rng.choice(codes, size)
    pp = rng.choice([2, 4, 8], size)
    m = 2 * pp * rng.choice([1, 2, 3], size)  # DualPipe(V) need m >= 2·pp, DualPipe an even m
    stage = (rng.random(size) * pp).astype(np.int64)
    return schedule, pp, stage, m


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_each_row_reads_its_own_plan(seed):
    schedule, pp, stage, m = _rows(seed, 400)
    got = executed_in_flight(schedule, pp, stage, m)
    for i in range(schedule.size):
        if Schedule.executed(np.array([schedule[i]]))[0]:
            want = peak_in_flight_counts(int(schedule[i]), int(pp[i]), int(m[i]))[int(stage[i])]
        else:
            want = 0.0
        assert got[i] == want, (i, schedule[i], pp[i], m[i], stage[i])


def test_shape_kept_and_a_stage_outside_the_pipeline_refused():
    schedule, pp, stage, m = (x.reshape(20, 20) for x in _rows(3, 400))
    assert executed_in_flight(schedule, pp, stage, m).shape == (20, 20)
    with pytest.raises(ValueError, match="stage outside"):
        executed_in_flight(np.array([Schedule.ZB_V.code]), np.array([4]), np.array([4]), np.array([8]))
    assert not executed_in_flight(np.array([Schedule.ONE_F_ONE_B.code]), 4, 1, 8).any()
