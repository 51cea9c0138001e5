"""The wave grouping of compiled plans (``_levels``) is unchanged by its speed-up: for every schedule over a
grid of (pp, micro-batches, vpp), the waves equal those of the reference Kahn sort (the previous
implementation, kept here as the oracle), wave by wave and in the same order, so the compiled programs — and
with them every executed event time, in-flight count and search row — are the same."""

from __future__ import annotations

import numpy as np
import pytest

from distcalc.errors import ConfigError
from distcalc.schedules import SCHEDULES, compile_plan
from distcalc.schedules.execute import _levels


def _reference_levels(count: int, prev: np.ndarray, dep: np.ndarray) -> list[np.ndarray]:
    """Kahn's sort one wave at a time with an unbuffered decrement per edge (the NumPy-per-wave version it replaced)."""
    src = np.concatenate([prev, dep[:, 0], dep[:, 1]])
    dst = np.tile(np.arange(count), 3)
    keep = src < count
    src, dst = src[keep], dst[keep]
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    starts = np.searchsorted(src, np.arange(count + 1))
    waiting = np.bincount(dst, minlength=count)
    wave = np.flatnonzero(waiting == 0)
    levels = []
    while wave.size:
        levels.append(wave)
        lo, counts = starts[wave], starts[wave + 1] - starts[wave]
        total = int(counts.sum())
        if not total:
            break
        offsets = np.cumsum(counts) - counts
        successors = dst[np.repeat(lo - offsets, counts) + np.arange(total)]
        np.subtract.at(waiting, successors, 1)
        successors = np.unique(successors)
        wave = successors[waiting[successors] == 0]
    return levels


def _shapes():
    for name in sorted(SCHEDULES):
        for pp in (2, 3, 4, 8):
            for micro in (1, 2, 3, 4, 6, 8, 12, 16, 24):
                for vpp in (1, 2):
                    yield name, pp, micro, vpp


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_levels_equal_reference_kahn_on_every_schedule(name: str) -> None:
    compared = 0
    for sched, pp, micro, vpp in _shapes():
        if sched != name:
            continue
        try:
            plan = SCHEDULES[name].plan(pp, micro, vpp)
        except ConfigError:
            continue
        program = compile_plan(plan)
        K = len(program.ops)
        # rebuild the un-renumbered wait graph from the program: waits are in wave numbering, which is a
        # permutation, so both sorts must give the same waves on it
        prev, dep = program.waits[:, 0], program.waits[:, 1:]
        new, old = _levels(K, prev, dep), _reference_levels(K, prev, dep)
        assert len(new) == len(old)
        for a, b in zip(new, old):
            np.testing.assert_array_equal(a, b)
        bounds = [(int(lo), int(hi)) for lo, hi in program.levels]
        assert sum(hi - lo for lo, hi in bounds) == K
        compared += 1
    assert compared > 0


@pytest.mark.parametrize("name", ["1f1b", "zb-h2", "zb-v", "dualpipe", "dualpipev", "interleaved"])
def test_compiled_programs_equal_with_reference_levels(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole compiled program (op order, waits, waves) is identical with the reference sort."""
    import sys

    execute_module = sys.modules["distcalc.schedules.execute"]

    for pp, micro, vpp in ((4, 8, 1), (4, 8, 2), (8, 16, 1), (3, 6, 2)):
        try:
            plan = SCHEDULES[name].plan(pp, micro, vpp)
        except ConfigError:
            continue
        new = compile_plan(plan)
        monkeypatch.setattr(execute_module, "_levels", _reference_levels)
        old = execute_module.compile_plan(plan)
        monkeypatch.undo()
        assert new.ops == old.ops and new.levels == old.levels
        for field in ("device", "kind", "stage", "pair_stage", "waits", "across", "first", "last"):
            np.testing.assert_array_equal(getattr(new, field), getattr(old, field))
