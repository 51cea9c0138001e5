"""Enumeration of the search space and the Pareto front."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from distcalc.errors import ConfigError
from distcalc.model import ModelSpec
from distcalc.parallel import ParallelConfig, Recompute, Schedule, validate_for_model
from distcalc.search.pareto import pareto_front
from distcalc.search.readable import config_row
from distcalc.search.space import (
    COLUMNS, DEFAULT_SCHEDULES, RECOMPUTE_CHOICES, SCHEDULE_CHOICES, SpaceChoices, SpaceLimits, divisors,
    enumerate_space, limits_for_model,
)

GPT3 = SpaceLimits(num_layers=96, num_heads=96, num_kv_heads=96, num_experts=1, seq_len=2048, global_batch=64,
                   gpus_per_node=8)


def _brute_force(spec: ModelSpec, gpus: int, seq_len: int, global_batch: int, node: int,
                 schedules: tuple[str, ...] = DEFAULT_SCHEDULES) -> set[tuple]:
    """Oracle: every combination that ParallelConfig + validate_for_model accept, minus the search-only
    rules (TP inside a node; interleaved needs micro-batches % pp) and the equivalent duplicates. The
    embedding/loss split is derived: on exactly where the layers alone do not divide by pp·vpp."""
    out = set()
    layers = spec.num_hidden_layers
    vpps = sorted(set(divisors(layers).tolist()) | set(divisors(layers + 2).tolist()))
    degrees = [(tp, cp, pp, ep) for tp, cp, pp, ep in itertools.product(*[divisors(gpus).tolist()] * 4)
               if gpus % (tp * cp * pp) == 0]
    for (tp, cp, pp, ep), vpp, sched, mb, zero, rec, sp in itertools.product(
            degrees, vpps, [Schedule(name) for name in schedules], divisors(global_batch).tolist(),
            range(4), [Recompute(r) for r in RECOMPUTE_CHOICES], (False, True)):
        dp = gpus // (tp * cp * pp)
        if min(node, gpus) % tp:
            continue  # search-only: group does not fit
        if pp == 1 and sched != Schedule.ONE_F_ONE_B or sp and tp == 1 or zero and dp * cp == 1:
            continue  # equivalent duplicates (or zero-bubble without a pipeline)
        if sched == Schedule.INTERLEAVED and global_batch % (mb * dp) == 0 and (global_batch // (mb * dp)) % pp:
            continue  # search-only: Megatron's interleaved schedule needs micro-batches % pp == 0
        split = layers % (pp * vpp) != 0
        try:
            config = ParallelConfig(gpus=gpus, tp=tp, pp=pp, cp=cp, ep=ep, vpp=vpp, schedule=sched,
                                    micro_batch=mb, global_batch=global_batch, seq_len=seq_len, zero=zero,
                                    recompute=rec, sequence_parallel=sp, account_for_embedding_and_loss=split)
            validate_for_model(config, spec)
        except ConfigError:
            continue
        assert config.data_parallel == dp
        out.add((tp, pp, dp, cp, ep, vpp, mb, zero, rec.code, int(sp), sched.code, int(split)))
    return out


def _rows(space) -> set[tuple]:
    return set(zip(*(space.configs[name].tolist() for name in COLUMNS)))


def test_divisors():
    assert divisors(12).tolist() == [1, 2, 3, 4, 6, 12]
    assert divisors(1).tolist() == [1]


SMALL_DENSE = ModelSpec(name="tiny", hidden_size=96, num_hidden_layers=12, num_attention_heads=12,
                        num_key_value_heads=4, intermediate_size=384, vocab_size=1000)
SPLIT_DENSE = ModelSpec(name="tiny-split", hidden_size=96, num_hidden_layers=6, num_attention_heads=12,
                        num_key_value_heads=4, intermediate_size=384, vocab_size=1000)  # L + 2 = 8: pp 4 by the split
SMALL_MOE = ModelSpec(name="tiny-moe", hidden_size=64, num_hidden_layers=4, num_attention_heads=8,
                      intermediate_size=256, vocab_size=1000, num_local_experts=4, num_experts_per_tok=2)


@pytest.mark.parametrize("spec, gpus, seq_len, batch, node", [
    (SMALL_DENSE, 8, 64, 8, 4), (SMALL_DENSE, 6, 24, 6, 8), (SMALL_MOE, 8, 32, 4, 8), (SPLIT_DENSE, 8, 64, 16, 8)])
def test_matches_parallel_config_validation(spec, gpus, seq_len, batch, node):
    limits = limits_for_model(spec, seq_len=seq_len, global_batch=batch, gpus_per_node=node)
    space = enumerate_space(limits, gpus)
    assert _rows(space) == _brute_force(spec, gpus, seq_len, batch, node)
    assert space.size == len(_rows(space))  # no duplicates
    assert np.any(space.configs["account_for_embedding_and_loss"] == 1)  # every case has split-only (pp, vpp)


@pytest.mark.parametrize("spec, gpus, seq_len, batch, node", [
    (SMALL_DENSE, 8, 64, 32, 8), (SPLIT_DENSE, 8, 64, 16, 8), (SMALL_MOE, 8, 32, 8, 8)])
def test_every_schedule_matches_parallel_config_validation(spec, gpus, seq_len, batch, node):
    """With every schedule (ZB-H2, ZB-V, DualPipe, DualPipeV too) the space is exactly what ParallelConfig and
    validate_for_model accept (pp parity, micro-batch counts, V-shaped chunking)."""
    limits = limits_for_model(spec, seq_len=seq_len, global_batch=batch, gpus_per_node=node)
    space = enumerate_space(limits, gpus, SpaceChoices(schedule=SCHEDULE_CHOICES))
    assert _rows(space) == _brute_force(spec, gpus, seq_len, batch, node, SCHEDULE_CHOICES)
    assert set(space.configs["schedule"].tolist()) >= {4, 5, 6, 7}


def test_split_is_derived_and_can_be_turned_off():
    """The split is on exactly where L % (pp·vpp) != 0; without it the space is the even splits alone."""
    limits = limits_for_model(SPLIT_DENSE, seq_len=64, global_batch=16, gpus_per_node=8)
    space = enumerate_space(limits, 8)
    c = space.configs
    split = c["account_for_embedding_and_loss"] == 1
    assert np.array_equal(split, 6 % (c["pp"] * c["vpp"]) != 0)
    assert set(c["pp"][split].tolist()) == {2, 4}  # pp 4 only with the split, pp 2 with vpp 4
    assert 8 not in c["pp"].tolist()  # 8 slots over 8 stages: one each, fewer than the 2 required
    assert np.all(8 % (c["pp"][split] * c["vpp"][split]) == 0) and np.all(c["pp"][split] > 1)
    even = enumerate_space(limits, 8, SpaceChoices(embedding_loss_split=False))
    assert not np.any(even.configs["account_for_embedding_and_loss"])
    assert _rows(even) == {r for r in _rows(space) if r[-1] == 0}
    r = even.rejections
    assert r.total + r.equivalent + even.size == even.universe < space.universe


@settings(max_examples=40, deadline=None)
@given(gpus=st.sampled_from([1, 2, 6, 8, 12, 16, 24, 64]), layers=st.sampled_from([2, 12, 24, 96]),
       heads=st.sampled_from([8, 12, 96]), batch=st.sampled_from([1, 8, 12, 64]),
       experts=st.sampled_from([1, 8]), node=st.sampled_from([4, 8]))
def test_accounting_adds_up_and_rows_are_valid(gpus, layers, heads, batch, experts, node):
    limits = SpaceLimits(num_layers=layers, num_heads=heads, num_kv_heads=heads, num_experts=experts,
                         seq_len=2048, global_batch=batch, gpus_per_node=node)
    space = enumerate_space(limits, gpus)
    r = space.rejections
    assert r.total + r.equivalent + space.size == space.universe
    assert sum(r.rules.values()) == r.total
    c = space.configs
    assert np.all(c["tp"] * c["pp"] * c["dp"] * c["cp"] == gpus)
    stages, split = c["pp"] * c["vpp"], c["account_for_embedding_and_loss"] == 1
    assert np.array_equal(split, layers % stages != 0)
    assert np.all((layers + 2) % stages[split] == 0) and np.all((layers + 2) // c["pp"][split] >= 2)
    assert np.all(batch % (c["micro_batch"] * c["dp"]) == 0)
    assert np.all(heads % c["tp"] == 0)
    assert np.all((c["dp"] * c["cp"]) % c["ep"] == 0)


def test_gpt3_space_counts():
    space = enumerate_space(GPT3, 64)
    assert space.rejections.by_reason["group_does_not_fit"] > 0  # tp = 16, 32, 64 leave the node
    assert space.configs["tp"].max() == 8
    row = config_row(space.configs, 0)
    assert set(row) == set(COLUMNS)
    assert isinstance(row["schedule"], str) and isinstance(row["sequence_parallel"], bool)
    assert isinstance(row["account_for_embedding_and_loss"], bool)
    # 96 layers: every pp (a power of 2) splits evenly, so only vpp 7, 14, 49, 98 (dividing 98) need the split
    c = space.configs
    split = c["account_for_embedding_and_loss"] == 1
    assert set(c["vpp"][split].tolist()) <= {7, 49} and set(c["pp"][split].tolist()) == {2}
    # Korthikanti's configuration is in the space.
    c = space.configs
    match = ((c["tp"] == 8) & (c["pp"] == 8) & (c["vpp"] == 3) & (c["micro_batch"] == 1)
             & (c["sequence_parallel"] == 1) & (c["recompute"] == RECOMPUTE_CHOICES.index("selective")))
    assert np.count_nonzero(match) == 1  # dp = 1: only ZeRO 0, only the interleaved schedule


@settings(max_examples=60, deadline=None)
@given(points=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 6)), min_size=0, max_size=30))
def test_pareto_front_matches_quadratic_definition(points):
    x = np.array([p[0] for p in points], dtype=float)
    y = np.array([p[1] for p in points], dtype=float)
    front = pareto_front(x, y)
    expected = set()
    for i, (xi, yi) in enumerate(points):
        dominated = any((xj <= xi and yj <= yi and (xj < xi or yj < yi)) for xj, yj in points)
        duplicate_before = any(points[j] == (xi, yi) for j in range(i))
        if not dominated and not duplicate_before:
            expected.add(i)
    assert set(front.tolist()) == expected
    assert np.all(np.diff(x[front]) > 0) and np.all(np.diff(y[front]) < 0)
