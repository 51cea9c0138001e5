"""schedules.row_runner.device_sums: each device's durations added one at a time in its operation order —
the same bits as a running sum per device, whatever the block size of the gathers."""

import numpy as np
import pytest

from distcalc.schedules import get_schedule
from distcalc.schedules import row_runner
from distcalc.schedules.execute import compile_plan


@pytest.mark.parametrize("block", [1, 7, row_runner.SUM_BLOCK_ELEMENTS])
def test_device_sums_are_the_running_sums_in_operation_order(block, monkeypatch):
    monkeypatch.setattr(row_runner, "SUM_BLOCK_ELEMENTS", block)
    rng = np.random.default_rng(5)
    n, rows = 9, 12
    # magnitudes spread over 30 decades: the order of the additions changes the bits
    source = np.vstack([rng.uniform(0, 1, (rows, n)) * 10.0 ** rng.integers(-15, 15, (rows, n)), np.zeros((1, n))])
    counts = (5, 1, 8)  # devices with different operation counts: the shorter ones padded with the zero row
    grid = np.full((max(counts), len(counts)), rows)
    picks = [rng.integers(0, rows, c) for c in counts]
    for d, pick in enumerate(picks):
        grid[:len(pick), d] = pick
    expected = np.zeros((len(counts), n))
    for d, pick in enumerate(picks):
        for i in pick:
            expected[d] = expected[d] + source[i]
    assert np.array_equal(row_runner.device_sums(source, grid), expected)


@pytest.mark.parametrize("name,p,m", [("zb-v", 4, 8), ("dualpipe", 4, 8), ("zb-h2", 3, 6)])
def test_device_grid_lists_each_devices_operations_in_order(name, p, m):
    program = compile_plan(get_schedule(name).plan(p, m))
    K = len(program.ops)
    grid = program.device_grid
    assert grid.shape[1] == p
    for d in range(p):
        column = grid[:, d]
        assert column[column < K].tolist() == np.flatnonzero(program.device == d).tolist()
    assert np.count_nonzero(grid < K) == K
