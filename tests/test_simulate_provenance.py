"""All-to-All checked by provenance: correct schedules verify, each kind of schedule error is caught, and the
verdict matches the dense executor's on the same schedules."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from distcalc.simulate.execute import _owner_masks, expected_buffers, run
from distcalc.simulate.plans import generate_schedule
from distcalc.simulate.provenance import verify_copy_schedule
from distcalc.simulate.schedule import Op
from distcalc.topology import make_topology

M = float(1 << 20)


def _schedule(kind, gpus, algorithm, shape=None):
    topo = make_topology(kind, gpus, bandwidth_bytes_per_s=100e9, latency_s=5e-6, shape=shape)
    return generate_schedule("all-to-all", algorithm, topo, M, None, None)


def _verify(schedule):
    sender, receiver = _owner_masks(schedule)
    return verify_copy_schedule(schedule, sender.astype(np.int64), receiver.astype(np.int64))


def _dense_ok(schedule) -> bool:
    data = np.random.default_rng(1).integers(0, 1 << 20, size=(schedule.gpus, schedule.chunks, 1)).astype(float)
    expected, must = expected_buffers(schedule, data)
    return bool(np.all(~must | np.all(run(schedule, data)[: schedule.gpus] == expected, axis=-1)))


CASES = [("switch", 8, "direct", None), ("switch", 7, "pairwise", None), ("switch", 8, "bruck", None),
         ("switch", 6, "bruck", None), ("ring", 6, "ring", None), ("ring", 5, "bidirectional-ring", None),
         ("torus", 12, "direct", (3, 4)), ("mesh", 8, "direct", (2, 4))]


@pytest.mark.parametrize("kind, gpus, algorithm, shape", CASES)
def test_correct_schedules_verify_as_the_dense_executor_does(kind, gpus, algorithm, shape):
    schedule = _schedule(kind, gpus, algorithm, shape)
    assert _verify(schedule)[0] and _dense_ok(schedule)


def _drop(schedule, row):
    keep = np.ones(schedule.src.size, dtype=bool)
    keep[row] = False
    counts = np.diff(schedule.step_ptr) - np.bincount(schedule.step_of_row()[~keep], minlength=schedule.steps)
    return dataclasses.replace(schedule, src=schedule.src[keep], dst=schedule.dst[keep],
                               chunk=schedule.chunk[keep], op=schedule.op[keep], tie=schedule.tie[keep],
                               step_ptr=np.concatenate([[0], np.cumsum(counts)]))


@pytest.mark.parametrize("kind, gpus, algorithm, shape", CASES)
def test_a_dropped_transfer_fails_both_checks(kind, gpus, algorithm, shape):
    schedule = _schedule(kind, gpus, algorithm, shape)
    broken = _drop(schedule, schedule.src.size // 2)
    verified, message, _ = _verify(broken)
    assert not verified and not _dense_ok(broken)
    assert "never arrived" in message or "does not hold" in message


def test_forwarding_before_receiving_collisions_and_reductions_fail():
    schedule = _schedule("ring", 6, "ring")  # store-and-forward: later steps forward what earlier ones brought
    late = schedule.step_of_row() > 0
    early_first = dataclasses.replace(schedule, step_ptr=np.array([0, schedule.src.size]))  # one step: no time
    assert late.any() and "does not hold" in _verify(early_first)[1]
    direct = _schedule("switch", 4, "direct")
    doubled = dataclasses.replace(direct, src=np.concatenate([direct.src, direct.src[:1]]),
                                  dst=np.concatenate([direct.dst, direct.dst[:1]]),
                                  chunk=np.concatenate([direct.chunk, direct.chunk[:1]]),
                                  op=np.concatenate([direct.op, direct.op[:1]]),
                                  tie=np.concatenate([direct.tie, direct.tie[:1]]),
                                  step_ptr=np.array([0, direct.src.size + 1]))
    assert "copy collision" in _verify(doubled)[1]
    reducing = dataclasses.replace(direct, op=np.full_like(direct.op, int(Op.REDUCE)))
    assert "reduces" in _verify(reducing)[1]
