"""Run a compiled plan one operation at a time on a few reused rows (the executor's path for many configurations).

:func:`distcalc.schedules.execute.execute` computes every operation's end time for n configurations at once:
``end[k] = max(end[previous on the device], end[input] (+ Send/Recv if made on another device)) + duration[k]``.
One operation at a time, each is a handful of NumPy calls on rows of n values. Keeping one row per operation
(thousands of them) walks a matrix of many megabytes, fresh pages included; but an operation's end is read
only until its last reader has run, so the rows are reused (:func:`row_plan`: operation k writes row
k mod R, R one more than the longest distance from an operation to its last reader), and the working set
— tens to a few thousand rows instead of one per operation — stays in the CPU caches. Each device's first and last operation keep their rows
(the step's start and end). The arithmetic, and its order per configuration, is that of the one-row-per-
operation recurrence, so the results are the same bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The row that holds zeros: "nothing to wait for" (a device's first operation).
ZERO_ROW = 0


@dataclass(frozen=True)
class RowPlan:
    """Operations as row numbers: ``steps`` per operation (input row 0, input row 1 or −1, across 1, input
    row 2 or −1, across 2, device, output row); ``rows`` in all (row :data:`ZERO_ROW` stays zero); the rows
    holding each device's first and last operation's end; ``single_input``: no operation has a second input."""

    steps: tuple[tuple[int, int, bool, int, bool, int, int], ...]
    rows: int
    first: tuple[int, ...]
    last: tuple[int, ...]
    single_input: bool


def row_plan(waits: np.ndarray, across: np.ndarray, device: np.ndarray, first: np.ndarray, last: np.ndarray,
             own_device_inputs: bool = True) -> RowPlan:
    """Rows for the operations of a compiled plan (:class:`~distcalc.schedules.execute.Program` ``waits``
    (K, 3): previous operation on the device and two inputs, K where there is none; ``across`` (K, 3);
    ``device``), numbered so that every input comes earlier. Operation k writes row 1 + k mod R, where R − 1
    is the longest distance from an operation to its last reader: the operation R later that writes the
    same row comes after that reader, and no operation reads an input R or more operations back, so no
    output shares a row with its own inputs. ``first`` / ``last`` (each device's first and last operation,
    the step's start and end) get rows of their own after those. ``own_device_inputs`` False: the inputs made
    on the operation's own device are left out (see
    :attr:`~distcalc.schedules.execute.Program.row_plan_across`)."""
    count = waits.shape[0]
    order = np.arange(count)
    inputs = waits.copy()
    if not own_device_inputs:
        inputs[:, 1:] = np.where(across[:, 1:], inputs[:, 1:], count)
    last_read = order.copy()
    for column in inputs.T:
        read = column < count
        np.maximum.at(last_read, column[read], order[read])
    kept = np.zeros(count, dtype=bool)
    kept[first] = kept[last] = True
    span = int((last_read - order)[~kept].max(initial=0)) + 1
    row_of = np.empty(count + 1, dtype=np.int64)  # index K: the zero row
    row_of[:count] = ZERO_ROW + 1 + order % span
    row_of[np.flatnonzero(kept)] = ZERO_ROW + 1 + span + np.arange(np.count_nonzero(kept))
    row_of[count] = ZERO_ROW
    mapped = row_of[inputs]
    mapped[:, 1:] = np.where(inputs[:, 1:] < count, mapped[:, 1:], -1)
    steps = tuple(zip(*mapped[:, 0:2].T.tolist(), across[:, 1].tolist(), mapped[:, 2].tolist(),
                      across[:, 2].tolist(), device.tolist(), row_of[:count].tolist()))
    return RowPlan(steps, ZERO_ROW + 1 + span + int(np.count_nonzero(kept)), tuple(row_of[first].tolist()),
                   tuple(row_of[last].tolist()), bool((mapped[:, 2] < 0).all()))


def run_rows(plan: RowPlan, durations: list[np.ndarray], p2p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(end of each device's first operation, end of its last), each (devices, n): the recurrence of the
    module docstring on ``durations`` (one (n,) row per operation) with Send/Recv time ``p2p`` (n,). Each
    device's busy time is :func:`device_sums` of the same durations."""
    maximum, add = np.maximum, np.add
    buffer = np.zeros((plan.rows, p2p.shape[0]))
    arrived = np.empty_like(p2p)  # an input from another device: its end plus the Send/Recv
    sends = bool(p2p.any())
    rows = list(buffer)  # row views made once, not per operation
    if not sends and plan.single_input:
        for (w0, w1, _, _, _, _, out), duration in zip(plan.steps, durations):
            row = rows[out]
            if w1 < 0:
                add(rows[w0], duration, row)
            else:
                maximum(rows[w0], rows[w1], out=row)
                add(row, duration, row)
    elif not sends:  # every input as it is
        for (w0, w1, _, w2, _, _, out), duration in zip(plan.steps, durations):
            row, ready = rows[out], rows[w0]
            if w1 >= 0:
                maximum(ready, rows[w1], out=row)
                ready = row
            if w2 >= 0:
                maximum(ready, rows[w2], out=row)
                ready = row
            add(ready, duration, row)
    else:
        for (w0, w1, a1, w2, a2, _, out), duration in zip(plan.steps, durations):
            row, ready = rows[out], rows[w0]  # the ready time is built in the output row, then the duration added
            for w, a in ((w1, a1), (w2, a2)):
                if w >= 0:
                    maximum(ready, add(rows[w], p2p, out=arrived) if a else rows[w], out=row)
                    ready = row
            add(ready, duration, out=row)
    return buffer[list(plan.first)], buffer[list(plan.last)]


#: Elements gathered per block by :func:`device_sums` (8 bytes each: a block stays in the CPU caches).
#: Measured (one call, best of 3, CPU shared with a test run): ZB-V p16 with 128 micro-batches (12,288
#: operations) on 300 configurations 12.2 / 6.6 / 5.3 / 17.7 ms at 2^12 / 2^14 / 2^16 / 2^18 elements, one
#: addition per operation 15.8 ms; DualPipe p8 (634 operations, 1,000 configurations) 0.25 ms at 2^16 vs
#: 0.29 ms; ZB-H2 p4 (768 operations, 80 configurations) 0.066 vs 0.21 ms.
SUM_BLOCK_ELEMENTS = 1 << 16


def device_sums(source: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """(devices, n) sums of rows of ``source`` (R, n): device d adds ``source[grid[i, d]]`` for i = 0, 1, …
    one at a time from 0 (``grid`` (M, devices); a device with fewer operations points its last entries at
    a row of zeros, which adds nothing) — the bits of adding each device's durations in operation order,
    with one addition per position i for every device at once instead of one per operation. The rows are
    gathered a block of positions at a time (:data:`SUM_BLOCK_ELEMENTS`)."""
    devices, n = grid.shape[1], source.shape[1]
    total = np.zeros((devices, n))
    add = np.add
    step = max(1, SUM_BLOCK_ELEMENTS // max(devices * n, 1))
    for lo in range(0, grid.shape[0], step):
        for row in source[grid[lo:lo + step]]:
            add(total, row, total)
    return total


__all__ = ["RowPlan", "SUM_BLOCK_ELEMENTS", "ZERO_ROW", "device_sums", "row_plan", "run_rows"]
