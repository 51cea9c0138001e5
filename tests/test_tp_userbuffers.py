"""TP communication overlap as TransformerEngine userbuffers runs it (``tp_comm_overlap``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.analyze.tp_overlap import (BULK_SMS, PIPELINE_SMS, PIPELINE_SPLITS, RING_EXCHANGE_SMS,
                                         bulk_exposed_s, pipeline_exposed_s, ring_exchange_exposed_s,
                                         userbuffers_exposure)
from distcalc.cli import app
from distcalc.parallel import ParallelConfig

S = 132  # H100 SXM SMs


def test_ring_exchange_hides_up_to_t_minus_one_chunks_of_its_gemm():
    # t = 4: the GEMM's 4 chunks, 3 transfers beside 3 of them -> window 0.75 g
    slow = RING_EXCHANGE_SMS / (S - RING_EXCHANGE_SMS)
    assert ring_exchange_exposed_s(0.5, 1.0, 4, S) == pytest.approx(slow * 0.5)  # hidden, GEMM slowed meanwhile
    assert ring_exchange_exposed_s(1.0, 1.0, 4, S) == pytest.approx(0.25 + slow * 0.75)
    # t = 2: one transfer beside the local half of the GEMM
    assert ring_exchange_exposed_s(1.0, 1.0, 2, S) == pytest.approx(0.5 + slow * 0.5)


def test_bulk_overlap_hides_behind_the_whole_gemm_on_its_sms():
    slow = BULK_SMS / (S - BULK_SMS)
    assert bulk_exposed_s(0.4, 1.0, S) == pytest.approx(slow * 0.4)
    assert bulk_exposed_s(1.5, 1.0, S) == pytest.approx(0.5 + slow * 1.0)


def test_pipelined_reduce_scatter_exposes_its_last_chunk():
    """TE default: the GEMM in 4 chunks, each chunk's ReduceScatter beside the next GEMM chunk."""
    n, slow = PIPELINE_SPLITS, PIPELINE_SMS / (S - PIPELINE_SMS)
    assert pipeline_exposed_s(0.4, 1.0, S) == pytest.approx(0.4 / n + slow * (n - 1) / n * 0.4)
    assert pipeline_exposed_s(2.0, 1.0, S) == pytest.approx(2.0 / n + (n - 1) / n * 1.0 + slow * (n - 1) / n * 1.0)


@settings(max_examples=200, deadline=None)
@given(comm=st.floats(0, 1e-2), gemm=st.floats(0, 1e-2), more=st.floats(0, 1e-2), tp=st.sampled_from([2, 4, 8]))
def test_exposure_is_nonnegative_grows_with_comm_and_never_exceeds_serial(comm, gemm, more, tp):
    slow = max(BULK_SMS, PIPELINE_SMS) / (S - max(BULK_SMS, PIPELINE_SMS))
    for fn in (lambda c, g: ring_exchange_exposed_s(c, g, tp, S), lambda c, g: bulk_exposed_s(c, g, S),
               lambda c, g: pipeline_exposed_s(c, g, S)):
        e = fn(comm, gemm)
        assert 0.0 <= e <= comm * (1 + slow) + 1e-15  # never more than the collective run serially, slowed
        assert fn(comm + more, gemm) >= e - 1e-15
        assert fn(comm, gemm + more) <= e + more * slow + 1e-15


def test_full_recompute_rerun_the_forward_pairs_in_backward():
    gemms = (np.array(1e-3),) * 4
    base = userbuffers_exposure(2e-3, 2e-3, gemms, gemms, gemms, 4, S, False)
    full = userbuffers_exposure(2e-3, 2e-3, gemms, gemms, gemms, 4, S, True)
    assert full.backward_s == pytest.approx(base.backward_s + base.forward_s)
    assert full.forward_s == base.forward_s and full.bulk_s == base.bulk_s


def _run(sp: bool, overlap: bool, tp: int = 4):
    config = ParallelConfig(gpus=64, tp=tp, pp=4, micro_batch=1, global_batch=128, seq_len=8192, dtype="fp8",
                            sequence_parallel=sp)
    options = AnalyzeOptions(tp_comm_overlap=overlap, tp_overlap_efficiency=1.0, distributed_optimizer=True)
    return analyze("llama3-70b", "dgx-h100", config, options)


def test_userbuffers_hide_most_tp_time_but_not_all():
    off, on = _run(True, False), _run(True, True)
    assert 0.0 < on.time_breakdown["tp_exposed_s"] < 0.5 * off.time_breakdown["tp_exposed_s"]
    assert on.time_breakdown["tp_on_link_s"] == pytest.approx(off.time_breakdown["tp_on_link_s"])
    assert on.step_time_s < off.step_time_s
    rows = [m for m in on.communication if m["dim"] == "tp"]
    assert sum(r["exposed_s"] for r in rows) < 0.5 * sum(r["time_s"] for r in rows)
    tp = next(o for o in on.overlaps if o["dim"] == "tp")
    assert "userbuffers" in tp["reason"]


def test_without_sequence_parallelism_userbuffers_change_nothing():
    assert _run(False, True).step_time_s == pytest.approx(_run(False, False).step_time_s)


@settings(max_examples=12, deadline=None)
@given(tp=st.sampled_from([2, 4, 8]), micro_batch=st.sampled_from([1, 2]), seq_len=st.sampled_from([2048, 8192]),
       cluster=st.sampled_from(["dgx-h100", "dgx-b200"]), dtype=st.sampled_from(["bf16", "fp8"]),
       recompute=st.sampled_from(["none", "full"]))
def test_userbuffers_never_expose_more_than_the_serial_collectives(tp, micro_batch, seq_len, cluster, dtype,
                                                                    recompute):
    config = ParallelConfig(gpus=8 * tp, tp=tp, pp=2, micro_batch=micro_batch, global_batch=64 * micro_batch,
                            seq_len=seq_len, dtype=dtype, sequence_parallel=True, recompute=recompute)
    serial = analyze("llama3-70b", cluster, config, AnalyzeOptions(tp_comm_overlap=False))
    ub = analyze("llama3-70b", cluster, config, AnalyzeOptions(tp_comm_overlap=True))
    assert 0.0 < ub.time_breakdown["tp_exposed_s"] <= serial.time_breakdown["tp_exposed_s"]
    assert ub.step_time_s <= serial.step_time_s
    assert np.isfinite(ub.step_time_s) and ub.time_breakdown["compute_s"] == serial.time_breakdown["compute_s"]


def test_cli_refuses_userbuffers_without_sequence_parallelism():
    """Megatron-LM ``arguments.py``: "Tensor parallel communication/GEMM overlap can happen only when sequence
    parallelism is enabled" — one line, exit code 2."""
    base = ["analyze", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--tp", "2", "--allow-oom"]
    refused = CliRunner().invoke(app, [*base, "--tp-comm-overlap"])
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines()[-1].startswith("error: --tp-comm-overlap needs --sequence-parallel")
    ok = CliRunner().invoke(app, [*base, "--tp-comm-overlap", "--sequence-parallel", "--json"])
    assert ok.exit_code == 0, ok.output
    report = json.loads(ok.output)
    assert report["options"]["tp_comm_overlap"] is True
    assert "userbuffers" in next(o for o in report["overlaps"] if o["dim"] == "tp")["reason"]
