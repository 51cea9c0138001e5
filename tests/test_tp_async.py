"""Backward TP collectives launched asynchronously through NCCL beside their GEMMs (``tp_async_backward``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.analyze.tp_async import (ASYNC_HIDDEN_FRACTION, LEE2025_COMPUTE_SLOWDOWN,
                                       LEE2025_SEQUENTIAL_OVER_OVERLAPPED, async_exposed_s, hidden_fraction)
from distcalc.parallel import ParallelConfig
from distcalc.validation.end_to_end import KORTHIKANTI_OPTIONS, table4_results, table5_results
from distcalc.validation.published.rows import published_runs
from distcalc.validation.published.stack_kernels import async_tp_backward


def test_hidden_fraction_reproduces_both_published_averages():
    """Overlapped = (1 + κ)·C, sequential = C + M: the fraction must give back r = sequential / overlapped."""
    f, kappa, r = ASYNC_HIDDEN_FRACTION, LEE2025_COMPUTE_SLOWDOWN, LEE2025_SEQUENTIAL_OVER_OVERLAPPED
    assert f == pytest.approx(0.3909, abs=1e-4)
    m = r * (1 + kappa) - 1  # communication per unit of compute
    assert m == pytest.approx(0.3103, abs=1e-4)
    overlapped = 1 + m * (1 - f)  # compute + the part of M overlap does not hide
    assert (1 + m) / overlapped == pytest.approx(r)


def test_hidden_fraction_refuses_inputs_without_communication():
    with pytest.raises(ValueError, match="r·\\(1 \\+ κ\\) > 1"):
        hidden_fraction(0.0, 1.0)


@settings(max_examples=200, deadline=None)
@given(c=st.floats(0, 10), window=st.floats(0, 10), kappa=st.floats(0, 0.5), r=st.floats(1.0, 2.0))
def test_exposed_lies_between_hidden_and_exposed(c, window, kappa, r):
    if r * (1 + kappa) <= 1:
        return
    f = hidden_fraction(kappa, r)
    assert 0 <= f <= 1
    exposed = float(async_exposed_s(c, window, f))
    assert max(0.0, c - window) - 1e-12 <= exposed <= c + 1e-12
    assert exposed >= (1 - f) * c - 1e-12  # never more hidden than the fraction
    assert np.isfinite(exposed)


def _tp_terms(config: ParallelConfig, options: AnalyzeOptions) -> tuple[float, float]:
    report = analyze("llama2-70b", "dgx-a100", config, options)
    return report.time_breakdown.get("tp_exposed_s", 0.0), report.step_time_s


def test_analyze_hides_only_the_overlappable_backward_collectives():
    config = ParallelConfig(gpus=64, tp=8, pp=4, micro_batch=1, global_batch=64, seq_len=4096,
                            sequence_parallel=True, recompute="selective")
    sync = AnalyzeOptions(tp_async_backward=False)
    asynchronous = AnalyzeOptions()  # on by default: Megatron-Core's ColumnParallelLinear (analyze.options)
    hidden_all = AnalyzeOptions(tp_overlap_efficiency=1.0, tp_async_backward=False)
    tp_sync, step_sync = _tp_terms(config, sync)
    tp_async, step_async = _tp_terms(config, asynchronous)
    tp_none, _ = _tp_terms(config, hidden_all)
    assert tp_none < tp_async < tp_sync and step_async < step_sync
    # SP backward: of the ten collectives of M bytes per layer, two ReduceScatters and two re-gathers overlap;
    # the hidden part is f of those four (all collectives of one layer cost the same here)
    overlappable = (tp_sync - tp_none)
    assert tp_sync - tp_async == pytest.approx(ASYNC_HIDDEN_FRACTION * overlappable, rel=1e-6)
    # what userbuffers or a full overlap hides stays hidden
    both = AnalyzeOptions(tp_overlap_efficiency=1.0, tp_async_backward=True)
    assert _tp_terms(config, both)[0] == pytest.approx(tp_none)


def test_no_tensor_parallelism_nothing_changes():
    config = ParallelConfig(gpus=64, tp=1, pp=8, micro_batch=1, global_batch=64, seq_len=4096)
    assert (_tp_terms(config, AnalyzeOptions(tp_async_backward=True))
            == _tp_terms(config, AnalyzeOptions(tp_async_backward=False)))


def test_korthikanti_table4_backward_lies_between_exposed_and_hidden_and_matches_async():
    """Korthikanti 2022 Table 4 (22B layer, TP 8, 2022 Megatron-LM with the asynchronous backward collectives):
    the measured backward is below the model with its overlappable collectives exposed and above it with them
    hidden; with 39 % hidden (Lee et al. 2025's averages, not these rows) every backward is within 2 %."""
    exposed = table4_results(KORTHIKANTI_OPTIONS.model_copy(update={"tp_async_backward": False}))
    hidden = table4_results(KORTHIKANTI_OPTIONS.model_copy(update={"tp_async_backward": False,
                                                                   "tp_overlap_efficiency": 1.0}))
    modelled = table4_results()
    for e, h, m in zip(exposed, hidden, modelled, strict=True):
        assert h["backward_ms"] < m["measured_backward_ms"] < e["backward_ms"], m["experiment"]
        assert abs(m["backward_ms"] / m["measured_backward_ms"] - 1) <= 0.02, m["experiment"]
        assert m["forward_ms"] == pytest.approx(e["forward_ms"])  # the forward collectives stay blocking


def test_korthikanti_table5_within_the_issue_target():
    errors = [abs(r["predicted_s"] / r["measured_s"] - 1) for r in table5_results()]
    assert np.mean(errors) <= 0.016 and max(errors) <= 0.03, errors


@pytest.mark.parametrize(("source", "expected"), [
    ("Narayanan2021_Table1", False),  # SC21 code predates the asynchronous all-reduce
    ("BLOOM_prequel_sweep_2022-02-21", False),  # Megatron-DeepSpeed: copy_to_tensor_model_parallel_region + F.linear
    ("torchtitan_A100_2024-08", False),
    ("MegaScale2024_Table2_MegatronLM_baseline", True),
    ("FlagPerf_nvidia_llama3_8B-megatron", True),
    ("SimuMax_B200_v1.2_2026", True),
    ("NeMo_24.07_perf_summary_FP8_H100", True),
])
def test_stacks_with_asynchronous_backward_collectives(source, expected):
    runs = [r for r in published_runs() if r.source == source]
    assert runs and all(async_tp_backward(r) is expected for r in runs)
