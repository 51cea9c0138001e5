"""analyze.executed.executed_pipeline_s over a batch: each configuration's pipeline and busiest-device times
are the bits it gets alone, whichever configurations share its plan or its pass times (the plans run once
per distinct row of (plan, times) over the whole batch)."""

from dataclasses import fields, replace

import numpy as np

from distcalc.analyze.executed import ExecutedTerms, executed_pipeline_s
from distcalc.parallel import Schedule

TERMS = [f.name for f in fields(ExecutedTerms)]


def _batch():
    rng = np.random.default_rng(7)
    codes = [Schedule.ONE_F_ONE_B.code, Schedule.ZB_H2.code, Schedule.ZB_V.code, Schedule.DUALPIPE.code,
             Schedule.DUALPIPEV.code]
    n = 60
    schedule = rng.choice(codes, n)
    pp = rng.choice([2, 4], n)
    m = pp * rng.choice([2, 4], n)
    terms = {k: rng.choice(rng.uniform(0.1, 1.0, 3), n) for k in TERMS}  # few values: rows repeat
    terms.update(middle_stage_layers=np.full(n, 4.0), embedding_loss_slot_layers=np.zeros(n),
                 first_stage_extra_layers=np.zeros(n), last_stage_extra_layers=np.zeros(n), p2p_latency_s=np.zeros(n))
    terms["layer_wgrad_s"] = np.minimum(terms["layer_wgrad_s"], terms["layer_backward_s"] / 2)
    terms["layer_ep_forward_s"] = np.minimum(terms["layer_ep_forward_s"], terms["layer_ep_all_s"])
    terms["output_wgrad_s"] = np.minimum(terms["output_wgrad_s"], terms["output_backward_s"])
    schedule[:4], pp[:4], m[:4] = codes[1], 4, 8  # four configurations on one plan, two with the same times
    for k in TERMS:
        terms[k][1] = terms[k][0]
    return schedule, pp, m, ExecutedTerms(**terms)


def test_executed_batch_equals_each_configuration_alone():
    schedule, pp, m, terms = _batch()
    pipeline, busy = executed_pipeline_s(schedule, pp, m, terms)
    executed = Schedule.executed(schedule)
    assert np.isnan(pipeline[~executed]).all() and np.isnan(busy[~executed]).all()
    assert (pipeline[executed] > 0).all() and (busy[executed] <= pipeline[executed]).all()
    for i in np.flatnonzero(executed):
        one = [np.array([x[i]]) for x in (schedule, pp, m)]
        alone = executed_pipeline_s(*one, replace(terms, **{k: getattr(terms, k)[i:i + 1] for k in TERMS}))
        assert alone[0][0] == pipeline[i] and alone[1][0] == busy[i], i
    assert pipeline[0] == pipeline[1] and busy[0] == busy[1]
