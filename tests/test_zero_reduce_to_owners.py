"""DeepSpeed ZeRO-1/2 reduces gradients with one Reduce per partition owner (analyze.zero_reduce)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from distcalc.analyze import analyze
from distcalc.analyze.zero_reduce import reduce_to_owners_factor
from distcalc.validation.published import comparisons


def test_factor_is_n_over_n_minus_one():
    # ring Reduce: n - 1 of n links busy for S/n bytes, n times; ReduceScatter: (n - 1)/n of S
    assert reduce_to_owners_factor(4) == pytest.approx(4 / 3)
    assert reduce_to_owners_factor(8) == pytest.approx(8 / 7)
    assert float(reduce_to_owners_factor(1)) == 1.0
    assert np.allclose(reduce_to_owners_factor([2, 4, 8]), [2.0, 4 / 3, 8 / 7])


def test_bad_group_size_is_refused():
    with pytest.raises(ValueError, match="dp_ranks 0 must be at least 1"):
        reduce_to_owners_factor(0)


@given(n=st.integers(min_value=2, max_value=4096))
def test_factor_is_above_one_and_falls_towards_one_with_the_group(n):
    f, g = float(reduce_to_owners_factor(n)), float(reduce_to_owners_factor(n + 1))
    assert 1.0 < g < f <= 2.0


def test_bloom_rows_pay_the_per_owner_reduces_in_their_exposed_dp_time():
    """The BLOOM sweep's DeepSpeed ZeRO-1 (reduce_scatter on by default, no overlap): the exposed DP time grows by
    the ReduceScatter's share x 1/(n - 1); other sources are not DeepSpeed ZeRO-1/2."""
    rows = [c for c in comparisons() if c.inputs is not None]
    bloom = [c for c in rows if c.run.source.startswith("BLOOM")]
    assert bloom and all(c.inputs.options.zero_reduce_to_owners for c in bloom)
    assert not any(c.inputs.options.zero_reduce_to_owners for c in rows if not c.run.source.startswith("BLOOM"))
    for c in bloom[:2] + bloom[-2:]:
        i = c.inputs
        plain = i.options.model_copy(update={"zero_reduce_to_owners": False})
        with_owners, without = (analyze(i.spec, i.cluster, i.config, o).time_breakdown for o in (i.options, plain))
        added = with_owners["dp_exposed_s"] - without["dp_exposed_s"]
        assert 0 < added < without["dp_exposed_s"] / (i.config.dp - 1)  # only the reduce half grows
        assert with_owners["compute_s"] == without["compute_s"]
