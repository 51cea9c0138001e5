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


def _bloom_like(zero, owners, dp=4):
    from distcalc.analyze import AnalyzeOptions
    from distcalc.cluster import load_cluster
    from distcalc.model import load_model
    from distcalc.parallel import ParallelConfig, Recompute
    spec = load_model("llama2-7b")
    config = ParallelConfig(gpus=8 * dp, tp=8, dp=dp, zero=zero, micro_batch=1, global_batch=8 * dp, seq_len=2048,
                            recompute=Recompute.FULL)
    options = AnalyzeOptions(overlap_grad_reduce=False, overlap_param_gather=False, zero_reduce_to_owners=owners)
    return analyze(spec, load_cluster("dgx-a100"), config, options)


def test_message_table_shows_the_scaled_reduce_and_zero3_keeps_its_reduce_scatter():
    """The per-message rows carry the owner Reduces' time and say so; ZeRO-3 (DeepSpeed's reduce_scatter_coalesced,
    FSDP) is not a per-owner Reduce and is unchanged by the switch."""
    plain, owners = _bloom_like(1, False), _bloom_like(1, True)
    rs = lambda r: next(m for m in r.communication if m["dim"] == "dp" and m["collective"] == "reduce-scatter")  # noqa: E731
    assert rs(owners)["time_s"] == pytest.approx(rs(plain)["time_s"] * 4 / 3, rel=1e-9)
    assert "one Reduce per partition owner" in rs(owners)["note"] and "owner" not in rs(plain)["note"]
    z3_plain, z3_owners = _bloom_like(3, False), _bloom_like(3, True)
    assert z3_owners.step_time_s == pytest.approx(z3_plain.step_time_s, rel=1e-12)
