"""Execute a copy-only schedule by provenance: which (node, chunk) holds the chunk's true data, from which step.

All-to-All holds ``N²`` chunks (one per (sender, receiver) block), so the dense executor's ``nodes × chunks``
buffers grow as ``N³`` (40 GiB at 1,024 ranks). Its transfers only copy, and a copy of chunk ``c`` carries
``c``'s data whenever its source held that data, so the check needs no values:

* at the start, the sender of every block holds it (step −1);
* a transfer of step ``s`` is valid when its source acquired the chunk in a step ``< s`` (a step reads the
  buffers as they were at its start); its destination then holds the chunk from step ``s`` on;
* two transfers writing the same chunk into the same node in one step are a schedule conflict;
* at the end, every receiver holds every block addressed to it.

Memory is ``O(chunks + transfers)``. This is stricter than the dense check in one respect: forwarding a chunk
its source never received is an error even when the garbage lands where nothing is checked.
"""

from __future__ import annotations

import numpy as np

from distcalc.simulate.schedule import Op, Schedule


def _first_acquisition(keys: np.ndarray, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (sorted) and the earliest step each was acquired in."""
    order = np.lexsort((steps, keys))
    keys, steps = keys[order], steps[order]
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return keys[first], steps[first]


def _held_before(held_keys: np.ndarray, held_steps: np.ndarray, query: np.ndarray,
                 before: np.ndarray) -> np.ndarray:
    """For each query key: acquired in a step strictly before ``before``."""
    at = np.minimum(np.searchsorted(held_keys, query), held_keys.size - 1)
    return (held_keys[at] == query) & (held_steps[at] < before)


def verify_copy_schedule(schedule: Schedule, sender: np.ndarray, receiver: np.ndarray) -> tuple[bool, str, tuple]:
    """(verified, message, wrong ranks) for a copy-only schedule whose chunk ``c`` starts on ``sender[c]``
    and must end on ``receiver[c]`` (module docstring)."""
    chunks = np.int64(schedule.chunks)
    step = schedule.step_of_row().astype(np.int64)
    src, dst, chunk = (a.astype(np.int64) for a in (schedule.src, schedule.dst, schedule.chunk))
    if np.any(schedule.op != Op.COPY):
        return False, f"{schedule.algorithm}: {schedule.pattern.value} schedule reduces (a copy-only pattern)", ()
    written = (step * schedule.nodes + dst) * chunks + chunk
    if np.unique(written).size != written.size:
        return False, f"{schedule.algorithm}: a step writes a chunk twice (copy collision)", ()
    c = np.arange(schedule.chunks, dtype=np.int64)
    keys, steps = _first_acquisition(np.concatenate([sender * chunks + c, dst * chunks + chunk]),
                                     np.concatenate([np.full(c.size, -1, dtype=np.int64), step]))
    valid = _held_before(keys, steps, src * chunks + chunk, step)
    if not valid.all():
        row = int(np.flatnonzero(~valid)[0])
        return False, (f"{schedule.algorithm}: step {int(step[row])} sends chunk {int(chunk[row])} from rank "
                       f"{int(src[row])}, which does not hold it"), (int(src[row]),)
    arrived = _held_before(keys, steps, receiver * chunks + c, np.full(c.size, schedule.steps, dtype=np.int64))
    if arrived.all():
        return True, "ok", ()
    ranks = tuple(int(r) for r in np.unique(receiver[~arrived]))
    first = int(np.flatnonzero(~arrived)[0])
    return False, (f"{schedule.algorithm}: {schedule.pattern.value} wrong on rank {int(receiver[first])} chunk "
                   f"{first} (never arrived); {len(ranks)} rank(s) wrong"), ranks


__all__ = ["verify_copy_schedule"]
