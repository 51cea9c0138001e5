"""DeepSpeed's pipeline engine runs as Megatron's 1F1B: the evidence behind the published-runs mapping note.

DeepSpeed's ``TrainSchedule`` (deepspeed/runtime/pipe/schedule.py) gives every stage 2(m + p − 1) steps; even
stages run forward passes on even steps while odd stages run backward passes, and every exchange between
neighbours is a blocking Send/Recv pair (``SendActivation``/``RecvActivation`` forward, ``SendGrad``/``RecvGrad``
backward) issued at the start of a step. A step of stage s therefore starts once its own previous step and the
previous step of every neighbour it exchanges with in this step are done. This test replays that rule (step →
micro-batch mapping as DeepSpeed defines it, written here from its description) and checks that the makespan is
distcalc's 1F1B ``m·t_max + (p − 1)·t_mean`` — not a lock-step ``2(m + p − 1)·max(F, B)``.
"""

from __future__ import annotations

import pytest

from distcalc.parallel import Schedule
from distcalc.pipeline import pipeline_time_s


def _step(stage: int, stages: int, step: int) -> tuple[str, int]:
    """(kind, micro-batch) of ``stage`` at ``step``: forward when step and stage have the same parity."""
    if step % 2 == stage % 2:
        return "F", step // 2 - stage // 2
    if step % 2 == 0:  # even step, odd stage
        return "B", step // 2 - stages + (stage + 1) // 2
    return "B", (step - 1) // 2 - stages + 1 + stage // 2


def deepspeed_makespan(forward_s: list[float], backward_s: list[float], m: int) -> float:
    """Makespan of DeepSpeed's TrainSchedule with blocking neighbour exchanges (module docstring)."""
    stages = len(forward_s)
    end = [0.0] * stages
    previous = [-1] * stages
    valid = lambda k: 0 <= k < m  # noqa: E731
    for step in range(2 * (m + stages - 1)):
        work = [_step(s, stages, step) for s in range(stages)]
        partners: list[set[int]] = [set() for _ in range(stages)]
        for s, (kind, k) in enumerate(work):  # a forward step on s exchanges with s − 1 (its backward step)
            if kind == "F" and s > 0 and (valid(k) or valid(previous[s])):
                partners[s].add(s - 1)
                partners[s - 1].add(s)
        start = [max([end[s]] + [end[q] for q in partners[s]]) for s in range(stages)]
        for s, (kind, k) in enumerate(work):
            busy = (forward_s[s] if kind == "F" else backward_s[s]) if valid(k) else 0.0
            end[s] = start[s] + busy
            previous[s] = k
    return max(end)


def _one_f_one_b(forward_s, backward_s, m):
    t = [f + b for f, b in zip(forward_s, backward_s)]
    return float(pipeline_time_s(Schedule.ONE_F_ONE_B.code, len(t), m, 1, max(t), sum(t) / len(t)))


@pytest.mark.parametrize("stages, m", [(2, 8), (4, 8), (6, 43), (12, 64), (12, 512)])
def test_uniform_stages_run_exactly_as_1f1b(stages, m):
    forward, backward = [1.0] * stages, [3.0] * stages  # backward with full recompute: 2 + 1 forwards
    makespan = deepspeed_makespan(forward, backward, m)
    assert makespan == pytest.approx(_one_f_one_b(forward, backward, m))
    assert makespan < 0.7 * 2 * (m + stages - 1) * max(backward)  # far from a lock-step pipeline


@pytest.mark.parametrize("stages, m", [(4, 32), (12, 64), (6, 256)])
def test_a_heavier_last_stage_sets_the_pace_as_in_1f1b(stages, m):
    forward = [1.0] * (stages - 1) + [1.5]  # the LM head and loss on the last stage
    backward = [3.0] * (stages - 1) + [4.5]
    assert deepspeed_makespan(forward, backward, m) == pytest.approx(_one_f_one_b(forward, backward, m), rel=0.01)
