"""The simulator's memory budget (measured bytes per transfer and per (step, link)) admits the issue's
2,048-rank ring All-Reduce and still refuses what cannot fit."""

from __future__ import annotations

import pytest

from distcalc.errors import ConfigError
from distcalc.simulate.budget import (
    BYTES_PER_STEP_LINK, BYTES_PER_TRANSFER, check_before_generation, check_schedule, memory_budget_bytes,
)


def _ring_on_switch(n: int) -> dict:
    # 2(N−1) steps of N transfers; a switch has 2N directed links; N chunks of 1 element on N ranks
    return dict(nodes=n, chunks=n, transfers=2 * n * (n - 1), elements=1, step_links=2 * (n - 1) * 2 * n)


def test_2048_rank_ring_allreduce_fits_the_budget():
    if memory_budget_bytes() < 2 << 30:
        pytest.skip("this machine has less than 8 GiB: the budget is a quarter of it")
    case = _ring_on_switch(2048)
    check_before_generation("all-reduce", "ring", 2048, 1)
    check_schedule("all-reduce", "ring", **case)
    need = case["transfers"] * BYTES_PER_TRANSFER + case["step_links"] * BYTES_PER_STEP_LINK
    assert need < 2 << 30


def test_1024_rank_alltoall_fits_by_provenance():
    # dense buffers would be 1024 x 1024^2 float64 x 5 = 40 GiB; provenance needs 64 B per chunk
    check_before_generation("all-to-all", "direct", 1024, 1)
    check_schedule("all-to-all", "direct", nodes=1024, chunks=1024 ** 2, transfers=1024 * 1023, elements=1,
                   step_links=1 * 2 * 1024)


def test_4096_ranks_and_huge_buffers_are_refused():
    with pytest.raises(ConfigError, match="transfers"):
        check_before_generation("all-reduce", "ring", 4096, 1)
    with pytest.raises(ConfigError, match="executed buffers"):
        check_before_generation("all-gather", "ring", 2048, 4096)
    with pytest.raises(ConfigError, match="budget"):
        check_schedule("all-reduce", "ring", **{**_ring_on_switch(2048), "step_links": 10 ** 9})
