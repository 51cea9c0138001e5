"""analyze.executed.executed_pipeline_s over a batch: each configuration's pipeline and busiest-device times
are the bits it gets alone, whichever configurations share its plan or its pass times (the plans run once
per distinct row of (plan, times) over the whole batch)."""

import numpy as np

from distcalc.analyze.executed import executed_pipeline_s
from distcalc.parallel import Schedule

TERMS = ("lps_mid", "slots", "first_extra", "last_extra", "layer_forward", "layer_backward", "wgrad", "ep_f",
         "ep_all", "emb_f", "emb_b", "emb_comm", "out_f", "out_b", "out_wg", "head_comm", "p2p_exposed",
         "p2p_latency")


def _batch():
    rng = np.random.default_rng(7)
    codes = [Schedule.ONE_F_ONE_B.code, Schedule.ZB_H2.code, Schedule.ZB_V.code, Schedule.DUALPIPE.code,
             Schedule.DUALPIPEV.code]
    n = 60
    schedule = rng.choice(codes, n)
    pp = rng.choice([2, 4], n)
    m = pp * rng.choice([2, 4], n)
    terms = {k: rng.choice(rng.uniform(0.1, 1.0, 3), n) for k in TERMS}  # few values: rows repeat
    terms.update(lps_mid=np.full(n, 4.0), slots=np.zeros(n), first_extra=np.zeros(n), last_extra=np.zeros(n),
                 p2p_latency=np.zeros(n))
    terms["wgrad"] = np.minimum(terms["wgrad"], terms["layer_backward"] / 2)
    terms["ep_f"] = np.minimum(terms["ep_f"], terms["ep_all"])
    terms["out_wg"] = np.minimum(terms["out_wg"], terms["out_b"])
    schedule[:4], pp[:4], m[:4] = codes[1], 4, 8  # four configurations on one plan, two with the same times
    for k in TERMS:
        terms[k][1] = terms[k][0]
    return schedule, pp, m, terms


def test_executed_batch_equals_each_configuration_alone():
    schedule, pp, m, terms = _batch()
    pipeline, busy = executed_pipeline_s(schedule, pp, m, terms)
    executed = Schedule.executed(schedule)
    assert np.isnan(pipeline[~executed]).all() and np.isnan(busy[~executed]).all()
    assert (pipeline[executed] > 0).all() and (busy[executed] <= pipeline[executed]).all()
    for i in np.flatnonzero(executed):
        one = [np.array([x[i]]) for x in (schedule, pp, m)]
        alone = executed_pipeline_s(*one, {k: v[i:i + 1] for k, v in terms.items()})
        assert alone[0][0] == pipeline[i] and alone[1][0] == busy[i], i
    assert pipeline[0] == pipeline[1] and busy[0] == busy[1]
