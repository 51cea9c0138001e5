"""What a simulation may cost: refuse a case that cannot fit in memory *before* allocating it.

The simulator's memory grows with the schedule's transfers (one row per chunk moved, then one per link it
crosses when routed) and with the executed buffers (``nodes × chunks × elements`` float64 numbers, about
five copies: data, buffers, expected values, snapshots). Both are estimated before the schedule is generated
(:func:`check_before_generation`, from the analytic step count) and checked exactly before execution
(:func:`check_schedule`), against :func:`memory_budget_bytes`.

:data:`BYTES_PER_TRANSFER` is measured: ``distcalc simulate all-reduce --gpus 4096`` (ring on a switch,
2·4096·4095 = 33.5 M transfers) reached 10.3 GB resident before it was stopped, about 320 B per transfer.
"""

from __future__ import annotations

import os

from distcalc.errors import ConfigError

#: Resident bytes per schedule row, generated + routed + timed (measured, module docstring).
BYTES_PER_TRANSFER = 320
#: float64 copies of the executed buffers alive at once (data, buffers, expected, snapshot, comparison).
BUFFER_COPIES = 5
#: Upper end of the budget: a simulation is a check of an algorithm, not a big-data job.
MAX_BUDGET_BYTES = 2 << 30
#: Most simulated ranks (the analytic ``distcalc collective`` takes up to 2^20).
MAX_SIMULATED_GPUS = 1 << 16
#: Most executed numbers per chunk.
MAX_ELEMENTS = 1 << 20


def memory_budget_bytes() -> int:
    """min(2 GiB, a quarter of this machine's physical memory)."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        physical = 4 * MAX_BUDGET_BYTES
    return int(min(MAX_BUDGET_BYTES, physical // 4))


def _gib(size_bytes: float) -> str:
    return f"{size_bytes / 2**30:.1f} GiB"


def _refuse(what: str, need_bytes: float, budget: int) -> ConfigError:
    return ConfigError(f"simulate: {what} needs about {_gib(need_bytes)}, more than the simulator's budget of "
                       f"{_gib(budget)}; lower --gpus or --elements (the analytic `distcalc collective` has no "
                       "such limit)")


def chunks_lower_bound(kind: str, gpus: int) -> int:
    """Fewest chunks any algorithm of ``kind`` uses: All-to-All N² blocks, sharded collectives N shards."""
    if kind == "all-to-all":
        return gpus * gpus
    if kind in ("reduce-scatter", "all-gather", "gather", "scatter"):
        return gpus
    return 1


def check_before_generation(kind: str, algorithm: str, gpus: int, steps: float, elements: int) -> None:
    """Estimate from the analytic step count (each step moves at most one chunk per rank on the algorithms
    that pipeline; All-to-All moves at least N·(N−1) blocks) and refuse what cannot fit."""
    budget = memory_budget_bytes()
    transfers = max(float(steps) * gpus, gpus * (gpus - 1) if kind == "all-to-all" else gpus - 1)
    if transfers * BYTES_PER_TRANSFER > budget:
        raise _refuse(f"{kind} ({algorithm}) on {gpus:,} GPUs (about {transfers:,.0f} transfers)",
                      transfers * BYTES_PER_TRANSFER, budget)
    buffers = float(gpus) * chunks_lower_bound(kind, gpus) * elements * 8 * BUFFER_COPIES
    if buffers > budget:
        raise _refuse(f"{kind} on {gpus:,} GPUs with --elements {elements:,} (executed buffers)", buffers, budget)


def check_schedule(kind: str, algorithm: str, nodes: int, chunks: int, transfers: int, elements: int) -> None:
    """The exact check once the schedule exists, before it is executed and routed."""
    budget = memory_budget_bytes()
    need = transfers * BYTES_PER_TRANSFER + float(nodes) * chunks * elements * 8 * BUFFER_COPIES
    if need > budget:
        raise _refuse(f"{kind} ({algorithm}) with {transfers:,} transfers over {chunks:,} chunks × {elements:,} "
                      "elements", need, budget)
