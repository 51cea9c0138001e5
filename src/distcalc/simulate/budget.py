"""What a simulation may cost: refuse a case that cannot fit in memory *before* allocating it.

The simulator's memory grows with the schedule's transfers (one row per chunk moved, then one per link it
crosses when routed) and with the executed buffers (``nodes × chunks × elements`` float64 numbers, about
five copies: data, buffers, expected values, snapshots). Both are bounded from below before the schedule is
generated (:func:`check_before_generation`: a case refused there cannot fit whatever the schedule) and
checked exactly before execution (:func:`check_schedule`), against :func:`memory_budget_bytes`.

:data:`BYTES_PER_TRANSFER` and :data:`BYTES_PER_STEP_LINK` are measured: ring All-Reduce on a switch
(``simulate("all-reduce", 1 GiB, switch, "ring")``, peak resident set of the whole process) took 497 MB at
1,024 ranks (2.1 M transfers), 882 MB at 1,400 (3.9 M) and 1,753 MB at 2,048 (8.4 M): 190–195 B per
transfer once the per-step link-load matrix (``steps × links`` float64 plus the bincount it is built from,
16 B per entry: 134 MB twice at 2,048 ranks) and the interpreter (~60 MB) are taken out; 200 B is kept.
(Before the matrix was counted separately, ``--gpus 4096`` — 33.5 M transfers, a 537 MB matrix — was
measured at 10.3 GB resident, about 320 B per transfer all included.)
"""

from __future__ import annotations

import os

from distcalc.errors import ConfigError

#: Resident bytes per schedule row, generated + routed + timed (measured, module docstring).
BYTES_PER_TRANSFER = 200
#: Resident bytes per (step, link) entry of the routed link loads (float64 matrix + its bincount); the
#: event-driven timing instead holds a table of data-ready times and their α parts per (node, chunk), also 16 B.
BYTES_PER_STEP_LINK = 16
#: float64 copies of the executed buffers alive at once (data, buffers, expected, snapshot, comparison).
BUFFER_COPIES = 5
#: Provenance check of All-to-All: chunk ids, first-acquisition keys and steps, sort order (int64 each), and
#: the sender/receiver arrays: 8 int64 per chunk, counted, not measured.
PROVENANCE_BYTES_PER_CHUNK = 64
#: Upper end of the budget: a simulation is a check of an algorithm, not a big-data job.
MAX_BUDGET_BYTES = 2 << 30
#: Most simulated ranks (the analytic ``distcalc collective`` takes up to 2^20): some schedules hold N² index
#: arrays whatever their transfer count (broadcast at N = 65,536 asked for 64 GiB), and the simulator checks
#: algorithms at up to thousands of ranks (benchmarks/simulate_scale.py: 1,024).
MAX_SIMULATED_GPUS = 1 << 13
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


#: All-Reduce algorithms that shard the buffer into at least N chunks (reduce-scatter + all-gather shape):
#: every chunk is reduced over N−1 transfers and spread over N−1 more.
SHARDED_ALL_REDUCE = frozenset({
    "ring", "direct", "rabenseifner", "swing", "bidirectional-ring", "bucket", "mirrored-halving",
    "dim-sequential", "dim-concurrent", "snake-ring", "hierarchical", "rail-ring", "nccl-ring", "astra-baseline"})


def chunks_lower_bound(kind: str, gpus: int) -> int:
    """Fewest chunks any algorithm of ``kind`` uses: All-to-All N² blocks, sharded collectives N shards."""
    if kind == "all-to-all":
        return gpus * gpus
    if kind in ("reduce-scatter", "all-gather", "gather", "scatter"):
        return gpus
    return 1


def transfers_lower_bound(kind: str, algorithm: str, gpus: int) -> int:
    """Fewest chunk transfers any schedule of (``kind``, ``algorithm``) on N GPUs makes: every block of an
    All-to-All, and every shard of a ReduceScatter/AllGather, crosses N−1 times; a sharded All-Reduce
    reduces and spreads each of its ≥ N chunks (2·N·(N−1)); any other All-Reduce does so for one chunk;
    a scatter-allgather Broadcast (Rabenseifner Reduce) has an AllGather (ReduceScatter) half; other
    Broadcast, Reduce, Gather and Scatter schedules reach N−1 ranks."""
    n = gpus
    if kind in ("all-to-all", "reduce-scatter", "all-gather"):
        return n * (n - 1)
    if kind == "all-reduce":
        return 2 * n * (n - 1) if algorithm in SHARDED_ALL_REDUCE else 2 * (n - 1)
    if (kind, algorithm) in (("broadcast", "scatter-allgather"), ("reduce", "rabenseifner")):
        return n * (n - 1)  # the all-gather (reduce-scatter) half
    return n - 1


def executed_bytes(kind: str, nodes: int, chunks: int, elements: int) -> float:
    """Memory of executing the schedule: dense float64 buffers (``nodes × chunks × elements``, about
    :data:`BUFFER_COPIES` copies), or for All-to-All, checked by provenance, a few int64 arrays per chunk
    (:data:`PROVENANCE_BYTES_PER_CHUNK`; its per-transfer arrays are inside :data:`BYTES_PER_TRANSFER`)."""
    if elements == 0:
        return 0.0
    if kind == "all-to-all":
        return float(chunks) * PROVENANCE_BYTES_PER_CHUNK
    return float(nodes) * chunks * elements * 8 * BUFFER_COPIES


def check_before_generation(kind: str, algorithm: str, gpus: int, elements: int) -> None:
    """Refuse, before the schedule is generated, a case whose *least* possible cost (the transfers of
    :func:`transfers_lower_bound`, the buffers of :func:`chunks_lower_bound`) already exceeds the budget."""
    budget = memory_budget_bytes()
    transfers = transfers_lower_bound(kind, algorithm, gpus)
    if transfers * BYTES_PER_TRANSFER > budget:
        raise _refuse(f"{kind} ({algorithm}) on {gpus:,} GPUs (at least {transfers:,} transfers)",
                      transfers * BYTES_PER_TRANSFER, budget)
    buffers = executed_bytes(kind, gpus, chunks_lower_bound(kind, gpus), elements)
    if buffers > budget:
        raise _refuse(f"{kind} on {gpus:,} GPUs with --elements {elements:,} (executed buffers)", buffers, budget)


def out_of_memory(kind: str, algorithm: str, gpus: int) -> ConfigError:
    """The error for a simulation that ran out of memory although its lower bounds fitted the budget."""
    return ConfigError(f"simulate: {kind} ({algorithm}) on {gpus:,} GPUs ran out of memory; lower --gpus or "
                       "--elements (the analytic `distcalc collective` has no such limit)")


def check_schedule(kind: str, algorithm: str, nodes: int, chunks: int, transfers: int, elements: int,
                   step_links: int = 0) -> None:
    """The exact check once the schedule exists, before it is executed and routed (``step_links``: steps ×
    directed links of the topology, the size of the link-load matrix; in event mode the entries of the
    ready-time table)."""
    budget = memory_budget_bytes()
    need = (transfers * BYTES_PER_TRANSFER + float(step_links) * BYTES_PER_STEP_LINK
            + executed_bytes(kind, nodes, chunks, elements))
    if need > budget:
        raise _refuse(f"{kind} ({algorithm}) with {transfers:,} transfers over {chunks:,} chunks × {elements:,} "
                      "elements", need, budget)
