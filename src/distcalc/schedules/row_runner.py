"""Run a compiled plan one operation at a time on a few reused rows (the executor's path for many configurations).

:func:`distcalc.schedules.execute.execute` computes every operation's end time for n configurations at once:
``end[k] = max(end[previous on the device], end[input] (+ Send/Recv if made on another device)) + duration[k]``.
One operation at a time, each is a handful of NumPy calls on rows of n values. Keeping one row per operation
(thousands of them) walks a matrix of many megabytes, fresh pages included; but an operation's end is read
only until its last reader has run, so the rows are reused like registers (:func:`row_plan`: a row is freed
after its last reader and handed to a later operation), and the working set is the values live at one time —
a few per device — which stays in the CPU caches. Each device's first and last operation keep their rows
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


def row_plan(steps: list[tuple[int, int, bool, int, bool, int]], first: list[int], last: list[int]) -> RowPlan:
    """Rows for operations ``steps`` (per operation: previous operation on the device, or ``len(steps)`` for
    none; input 1 or −1; across 1; input 2 or −1; across 2; device), operations in an order where every input
    comes earlier. An operation's row is freed once the operation after its last reader starts, so an
    output never shares a row with an input of the same operation; ``first`` / ``last`` (operation indices)
    keep theirs to the end."""
    count = len(steps)
    last_read = list(range(count))
    for k, (w0, w1, _, w2, _, _) in enumerate(steps):
        for w in (w0, w1, w2):
            if 0 <= w < count:
                last_read[w] = k
    for k in (*first, *last):
        last_read[k] = count
    freed_after: dict[int, list[int]] = {}
    for k, read in enumerate(last_read):
        freed_after.setdefault(read, []).append(k)
    row_of = [0] * count
    free: list[int] = []
    rows = ZERO_ROW + 1
    for k in range(count):
        free.extend(row_of[j] for j in freed_after.get(k - 1, ()))
        if free:
            row_of[k] = free.pop()
        else:
            row_of[k], rows = rows, rows + 1

    def row(w: int) -> int:
        return -1 if w < 0 else ZERO_ROW if w >= count else row_of[w]

    mapped = tuple((row(w0), row(w1), a1, row(w2), a2, d, row_of[k])
                   for k, (w0, w1, a1, w2, a2, d) in enumerate(steps))
    return RowPlan(mapped, rows, tuple(row_of[k] for k in first), tuple(row_of[k] for k in last),
                   all(w2 < 0 for _, _, _, w2, _, _, _ in mapped))


def run_rows(plan: RowPlan, durations: list[np.ndarray], p2p: np.ndarray, devices: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(end of each device's first operation, end of its last, its busy time), each (devices, n): the
    recurrence of the module docstring on ``durations`` (one (n,) row per operation) with Send/Recv time
    ``p2p`` (n,). Busy time: each device's durations added in operation order."""
    maximum, add = np.maximum, np.add
    buffer = np.zeros((plan.rows, p2p.shape[0]))
    busy = np.zeros((devices, p2p.shape[0]))
    arrived = np.empty_like(p2p)  # an input from another device: its end plus the Send/Recv
    sends = bool(p2p.any())
    rows, busy_rows = list(buffer), list(busy)  # row views made once, not per operation
    if not sends and plan.single_input:
        for (w0, w1, _, _, _, device, out), duration in zip(plan.steps, durations):
            row = rows[out]
            if w1 < 0:
                add(rows[w0], duration, out=row)
            else:
                maximum(rows[w0], rows[w1], out=row)
                add(row, duration, out=row)
            add(busy_rows[device], duration, out=busy_rows[device])
    else:
        for (w0, w1, a1, w2, a2, device, out), duration in zip(plan.steps, durations):
            row, ready = rows[out], rows[w0]  # the ready time is built in the output row, then the duration added
            for w, a in ((w1, a1), (w2, a2)):
                if w >= 0:
                    maximum(ready, add(rows[w], p2p, out=arrived) if a and sends else rows[w], out=row)
                    ready = row
            add(ready, duration, out=row)
            add(busy_rows[device], duration, out=busy_rows[device])
    return buffer[list(plan.first)], buffer[list(plan.last)], busy


__all__ = ["RowPlan", "ZERO_ROW", "row_plan", "run_rows"]
