"""F18/H03 bandwidth factor = the busiest GPU's egress in NCCL's two trees (1.5 at N = 3, where both are chains)."""

from __future__ import annotations

import numpy as np
import pytest

from distcalc.collective.flat import dbt_egress_factor, double_binary_tree_allreduce
from distcalc.simulate import simulate
from distcalc.simulate.tree import nccl_dtree_parents
from distcalc.topology import make_topology


@pytest.mark.parametrize("n", range(3, 130))
def test_factor_is_the_trees_busiest_egress(n):
    sent = np.zeros(n)  # in halves of M: one per edge up (child) and one per edge down (parent)
    for parent in nccl_dtree_parents(n):
        child = np.flatnonzero(parent >= 0)
        np.add.at(sent, child, 1)
        np.add.at(sent, parent[child], 1)
    assert dbt_egress_factor(n) == sent.max() / 2


def test_three_gpus_approach_the_formula_from_above():
    topo = make_topology("switch", 3, bandwidth_bytes_per_s=100e9, latency_s=5e-6)
    size = float(1 << 30)
    result = simulate("all-reduce", size, topo, "double-binary-tree", segments=64, verify=False, mode="event")
    analytic = double_binary_tree_allreduce(3, size, 100e9, 5e-6)
    assert result.timing.max_link_bytes == pytest.approx(1.5 * size)
    assert analytic.alpha_term_s + analytic.bw_term_s <= result.time_s <= 1.05 * (analytic.alpha_term_s
                                                                                   + analytic.bw_term_s)
