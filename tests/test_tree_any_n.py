"""``--topology tree`` on every N ≥ 1 (issue 22): the leaf layout, the seed's tree formulas by name, and the
simulator on the same N.

* Layout rule (``tree_leaf_size``): no leaf size given → one leaf when N ≤ 32, else 32 per leaf with a partly
  filled last leaf; a given size must divide N or be a power of two.
* The seed tool's Tree: AllReduce 2⌈log2 N⌉(α + M/B), Broadcast ⌈log2 N⌉(α + M/B) = the binomial tree
  (``binomial-tree``; aliases ``tree``, ``binary-tree``) on a full-bisection tree, for N = 1…130 analytically
  and simulated (executed, verified, routed over the leaf/spine links).
* Partly filled last leaves with oversubscribed uplinks: every valid algorithm's simulated time equals the
  analytic one (the fat-tree formulas hold unchanged, collective/fat_tree.py docstring).
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.collective import CollectiveKind, collective_cost, lower_bound, valid_algorithms
from distcalc.collective.fat_tree import _shift_factor
from distcalc.errors import TopologyError
from distcalc.simulate import simulate
from distcalc.topology import make_topology

GIB = float(1 << 30)
B, ALPHA = 12.5e9, 8e-6  # the issue's seed example: 12.5 GB/s, 8 µs
ALL_N = list(range(1, 131))  # 1…130: primes (2, 3, …, 127), powers of two, multiples of 32 and not
REL = 1e-9


def _seed_allreduce_s(n: int, m: float) -> float:
    return 2 * math.ceil(math.log2(n)) * (ALPHA + m / B) if n > 1 else 0.0


def _seed_broadcast_s(n: int, m: float) -> float:
    return math.ceil(math.log2(n)) * (ALPHA + m / B) if n > 1 else 0.0


@pytest.mark.parametrize("n", ALL_N)
def test_default_layout_fits_every_n(n):
    topo = make_topology("tree", n, B, ALPHA)
    leaf = topo.gpus_per_node
    assert leaf == min(32, n)
    assert topo.nodes == math.ceil(n / 32)
    assert topo.last_leaf_gpus == n - 32 * (topo.nodes - 1) if n > 32 else topo.last_leaf_gpus == n
    assert 1 <= topo.last_leaf_gpus <= leaf
    described = topo.describe()
    assert (described["leaves"], described["last_leaf_gpus"]) == (topo.nodes, topo.last_leaf_gpus)
    assert sum(int(part.split(" × ")[0].split()[0]) * int(part.split(" × ")[1].split()[0])
               for part in described["leaf_layout"].split(" + ")) == n


@pytest.mark.parametrize("kind,formula", [("all-reduce", _seed_allreduce_s), ("broadcast", _seed_broadcast_s)])
def test_seed_tree_formula_analytic_and_simulated_on_every_n(kind, formula):
    """Binomial tree = the seed's Tree, analytic and executed, on the default layout of N = 1…130."""
    for n in ALL_N:
        topo = make_topology("tree", n, B, ALPHA)
        assert "binomial-tree" in [a.value for a in valid_algorithms(kind, topo)], n
        expected = formula(n, GIB)
        for name in ("binomial-tree", "tree", "binary-tree"):
            assert collective_cost(kind, GIB, topo, name).time_s == pytest.approx(expected, rel=1e-12, abs=0), n
        result = simulate(kind, GIB, topo, "binomial-tree", elements_per_chunk=1, seed=n)
        assert result.verified, (n, result.execution.message)
        assert result.steps == (2 if kind == "all-reduce" else 1) * math.ceil(math.log2(n)), n
        assert result.time_s == pytest.approx(expected, rel=REL, abs=0), n


# (N, leaf given or None) with a partly filled last leaf; (9, 16): one partly used leaf.
PARTIAL = [(5, 2), (7, 2), (10, 4), (11, 4), (13, 8), (9, 16), (33, None), (40, None), (70, None), (100, None)]


def _partial_cases():
    for n, leaf in PARTIAL:
        for s in (2.0, 64.0):
            topo = make_topology("tree", n, 100e9, 5e-6, gpus_per_node=leaf, oversubscription=s)
            for kind in CollectiveKind:
                for algorithm in valid_algorithms(kind, topo):
                    yield pytest.param(n, leaf, s, kind.value, algorithm.value,
                                       id=f"{n}-leaf{leaf}-s{s:g}-{kind.value}-{algorithm.value}")


@pytest.mark.parametrize("n,leaf,s,kind,algorithm", list(_partial_cases()))
def test_partial_last_leaf_simulated_equals_analytic(n, leaf, s, kind, algorithm):
    topo = make_topology("tree", n, 100e9, 5e-6, gpus_per_node=leaf, oversubscription=s)
    m = float(1 << 20)
    result = simulate(kind, m, topo, algorithm, elements_per_chunk=1, seed=n)
    assert result.verified, result.execution.message
    analytic = result.analytic
    assert analytic.time_s >= lower_bound(kind, m, topo).time_s * (1 - REL)
    approx = algorithm == "double-binary-tree" or (  # ideal k → ∞ pipelining (F18)
        algorithm == "pipelined-chain" and topo.nodes > 1 and s > topo.gpus_per_node)  # two hop classes
    if approx:
        assert result.time_s >= analytic.time_s * (1 - REL)
        return
    assert result.steps == analytic.steps
    assert result.time_s == pytest.approx(analytic.time_s, rel=REL, abs=1e-15)


def test_partial_layouts_include_slow_uplinks():
    """The partial-leaf sweep really loads the spine: some algorithm pays the oversubscription."""
    topo = make_topology("tree", 100, 100e9, 5e-6, oversubscription=64.0)
    flat = make_topology("tree", 100, 100e9, 5e-6)
    assert collective_cost("all-to-all", 2**20, topo, "pairwise").time_s > \
        1.5 * collective_cost("all-to-all", 2**20, flat, "pairwise").time_s


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 200), log_leaf=st.integers(0, 6), shift=st.integers(1, 199))
def test_shift_crossings_are_worst_on_a_full_leaf(n, log_leaf, shift):
    """_shift_factor counts leaf 0; brute force over every leaf (the partial one included) finds no more."""
    leaf = min(1 << log_leaf, n)
    leaves = -(-n // leaf)
    d = shift % n
    worst = max(sum(1 for r in range(a, min(a + leaf, n)) if not a <= (r + d) % n < min(a + leaf, n))
                for a in range(0, n, leaf))
    s = 3.0 * leaf  # large enough that any crossing flow count shows in the factor
    assert _shift_factor(d, n, leaf, leaves, s) == pytest.approx(max(1.0, s * worst / leaf))


@pytest.mark.parametrize("n,leaf,layout", [(100, None, "3 leaves × 32 GPUs + 1 leaf × 4 GPUs"),
                                           (64, None, "2 leaves × 32 GPUs"), (31, None, "1 leaf × 31 GPUs"),
                                           (10, 4, "2 leaves × 4 GPUs + 1 leaf × 2 GPUs"),
                                           (12, 3, "4 leaves × 3 GPUs")])
def test_layout_words(n, leaf, layout):
    assert make_topology("tree", n, gpus_per_node=leaf).leaf_layout == layout


def test_leaf_size_that_neither_divides_nor_is_a_power_of_two_is_refused():
    with pytest.raises(TopologyError, match="--gpus 100 is not a multiple of --gpus-per-node 12"):
        make_topology("tree", 100, gpus_per_node=12)
    result = CliRunner().invoke(app, ["collective", "all-reduce", "--topology", "tree", "--gpus", "100",
                                      "--gpus-per-node", "12"])
    assert result.exit_code == 2
    text = result.output.strip()
    assert text.startswith("error: --gpus 100 is not a multiple of --gpus-per-node 12") and "\n" not in text


SEED = ["--topology", "tree", "--gpus", "100", "--size", "1GiB", "--bandwidth", "12.5GB/s", "--latency", "8us",
        "--algorithm", "all"]


@pytest.mark.parametrize("kind,formula", [("all-reduce", _seed_allreduce_s), ("broadcast", _seed_broadcast_s)])
def test_issue_command_prints_the_seed_tree_time_and_layout(kind, formula):
    runner = CliRunner()
    result = runner.invoke(app, ["collective", kind, *SEED, "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    times = {r["algorithm"]: r["time_s"] for r in payload["results"]}
    assert times["binomial-tree"] == pytest.approx(formula(100, GIB), rel=1e-12)
    assert 2 * 7 * (8e-6 + GIB / 12.5e9) == pytest.approx(1.20270284288, rel=1e-12)  # the issue's number
    topo = payload["topology"]
    assert (topo["gpus_per_leaf"], topo["leaves"], topo["last_leaf_gpus"]) == (32, 4, 4)
    table = runner.invoke(app, ["collective", kind, *SEED])
    assert table.exit_code == 0, table.output
    assert "3 leaves × 32 GPUs + 1 leaf × 4 GPUs" in table.output and "binomial-tree" in table.output
    simulated = runner.invoke(app, ["simulate", kind, *SEED[:-2], "--algorithm", "binary-tree", "--json"])
    assert simulated.exit_code == 0, simulated.output
    record = json.loads(simulated.stdout)
    assert record["verified"] and record["time_s"] == pytest.approx(formula(100, GIB), rel=REL)
