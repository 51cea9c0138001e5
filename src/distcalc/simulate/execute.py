"""Execute a schedule on simulated ranks holding real NumPy buffers, then check the collective's result.

Every GPU starts with random integer-valued float64 data (exact sums, so checks are equalities). Chunks a
rank does not own at the start are NaN, so a schedule that forwards data it never received, drops a
contribution or counts one twice produces a wrong (or NaN) result and fails the check:

* AllReduce: every rank holds Σ_r x_r.   ReduceScatter: rank r holds shard r of Σ_r x_r.
* AllGather: every rank holds the concatenation of the input shards.   Broadcast: every rank holds the root's buffer.
* Reduce: the root holds Σ_r x_r.   Gather: the root holds every rank's shard.   Scatter: rank r holds shard r
  of the root's buffer.   All-to-All: rank j holds the block every rank i addressed to j (checked by
  provenance, :mod:`distcalc.simulate.provenance`: its ``N²`` chunks would need ``N³`` dense buffers).

Within a step every transfer reads the buffers as they were at the start of the step. Two copies into the
same chunk of the same node in one step, or a copy and a reduction into it, are schedule errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from distcalc.simulate.provenance import verify_copy_schedule
from distcalc.simulate.schedule import Op, Pattern, Schedule


@dataclass(frozen=True)
class Execution:
    """Result of running a schedule: ``verified`` and, if not, the first mismatch in words."""

    verified: bool
    message: str
    mismatched_ranks: tuple[int, ...] = ()


class ScheduleConflict(ValueError):
    """Two transfers write the same chunk of the same node in one step in incompatible ways."""


def _owner_masks(schedule: Schedule) -> tuple[np.ndarray, np.ndarray]:
    """(owner rank of each chunk for sharded patterns, (sender, receiver) of each chunk for All-to-All)."""
    c = np.arange(schedule.chunks)
    parts = max(schedule.parts, 1)
    block = c // parts
    if schedule.pattern == Pattern.ALL_TO_ALL:
        return block // schedule.gpus, block % schedule.gpus
    return block, block


def initial_buffers(schedule: Schedule, data: np.ndarray) -> np.ndarray:
    """Buffers (nodes × chunks × elements) at the start: owned chunks hold ``data``, others NaN."""
    n, pattern = schedule.gpus, schedule.pattern
    buf = np.full((schedule.nodes,) + data.shape[1:], np.nan)
    buf[n:] = 0.0  # extra nodes (an in-network-reducing switch) accumulate from zero
    if pattern in (Pattern.ALL_REDUCE, Pattern.REDUCE, Pattern.REDUCE_SCATTER):
        buf[:n] = data
    elif pattern in (Pattern.BROADCAST, Pattern.SCATTER):
        buf[schedule.root] = data[schedule.root]
    else:  # AllGather, Gather: own shard; All-to-All: own send blocks
        sender, _ = _owner_masks(schedule)
        buf[sender, np.arange(schedule.chunks)] = data[sender, np.arange(schedule.chunks)]
    return buf


def expected_buffers(schedule: Schedule, data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(expected values, mask of the entries that must match), both nodes-free: gpus × chunks × elements."""
    n, chunks, pattern = schedule.gpus, schedule.chunks, schedule.pattern
    total = data.sum(axis=0)
    expected = np.zeros_like(data)
    must = np.zeros((n, chunks), dtype=bool)
    owner, receiver = _owner_masks(schedule)
    c = np.arange(chunks)
    if pattern == Pattern.ALL_REDUCE:
        expected[:], must[:] = total, True
    elif pattern == Pattern.REDUCE:
        expected[schedule.root], must[schedule.root] = total, True
    elif pattern == Pattern.REDUCE_SCATTER:
        expected[owner, c], must[owner, c] = total[c], True
    elif pattern == Pattern.ALL_GATHER:
        expected[:], must[:] = data[owner, c], True
    elif pattern == Pattern.GATHER:
        expected[schedule.root], must[schedule.root] = data[owner, c], True
    elif pattern == Pattern.BROADCAST:
        expected[:], must[:] = data[schedule.root], True
    elif pattern == Pattern.SCATTER:
        expected[owner, c], must[owner, c] = data[schedule.root, c], True
    else:  # All-to-All: receiver j holds block (i, j)
        expected[receiver, c], must[receiver, c] = data[owner, c], True
    return expected, must


def run(schedule: Schedule, data: np.ndarray) -> np.ndarray:
    """Apply every step to the initial buffers; returns the final buffers (nodes × chunks × elements).

    Vectorised per step over flat (node, chunk) indices. A scratch array detects, in O(transfers), whether a
    step writes some (node, chunk) twice: allowed only for reductions (summed with ``np.add.at``)."""
    buf = initial_buffers(schedule, data)
    elements = buf.shape[-1]
    flat = buf.reshape(-1, elements)
    chunks = schedule.chunks
    sidx = schedule.src.astype(np.int64) * chunks + schedule.chunk
    didx = schedule.dst.astype(np.int64) * chunks + schedule.chunk
    is_copy = schedule.op == Op.COPY
    owner = np.full(flat.shape[0], -1, dtype=np.int64)  # scratch: which row of the step wrote here last
    for s in range(schedule.steps):
        a, b = int(schedule.step_ptr[s]), int(schedule.step_ptr[s + 1])
        src, dst, copy = sidx[a:b], didx[a:b], is_copy[a:b]
        values = flat[src]  # snapshot: all reads of a step see the start-of-step buffers
        rows = np.arange(a, b)
        owner[dst] = rows
        unique = bool(np.all(owner[dst] == rows))
        if not unique:
            if copy.any():
                copies = dst[copy]
                owner[dst] = -1
                owner[copies] = rows[copy]
                if not np.all(owner[copies] == rows[copy]) or np.any(owner[dst[~copy]] >= 0):
                    raise ScheduleConflict(f"{schedule.algorithm}: step {s} writes a chunk twice (copy collision)")
            flat[dst[copy]] = values[copy]
            np.add.at(flat, dst[~copy], values[~copy])
        elif copy.all():
            flat[dst] = values
        elif not copy.any():
            flat[dst] += values
        else:
            flat[dst[copy]] = values[copy]
            flat[dst[~copy]] += values[~copy]
    return buf


def execute(schedule: Schedule, elements_per_chunk: int = 1, seed: int = 0) -> Execution:
    """Run ``schedule`` on random integer data and check the collective's postcondition. All-to-All (copies
    only, ``N²`` chunks) is checked by provenance instead (:mod:`distcalc.simulate.provenance`), without
    the ``N³`` buffers."""
    if schedule.pattern == Pattern.ALL_TO_ALL:
        sender, receiver = _owner_masks(schedule)
        return Execution(*verify_copy_schedule(schedule, sender.astype(np.int64), receiver.astype(np.int64)))
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 1 << 20, size=(schedule.gpus, schedule.chunks, elements_per_chunk)).astype(np.float64)
    try:
        final = run(schedule, data)
    except ScheduleConflict as error:
        return Execution(False, str(error))
    expected, must = expected_buffers(schedule, data)
    got = final[: schedule.gpus]
    wrong = must & ~np.all(got == expected, axis=-1)
    if not wrong.any():
        return Execution(True, "ok")
    ranks = tuple(int(r) for r in np.flatnonzero(wrong.any(axis=1)))
    rank = ranks[0]
    chunk = int(np.flatnonzero(wrong[rank])[0])
    return Execution(False, f"{schedule.algorithm}: {schedule.pattern.value} wrong on rank {rank} chunk {chunk} "
                            f"(expected {expected[rank, chunk].tolist()}, got {got[rank, chunk].tolist()}); "
                            f"{len(ranks)} rank(s) wrong", ranks)
