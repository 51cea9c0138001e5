"""DualPipe's published bubble / parameter / activation table, reproduced from the executed schedules."""

import pytest

from distcalc.schedules import PassTimes, get_schedule
from distcalc.validation import CASE_SETS
from distcalc.validation.dualpipe_table import (METHODS, activations_in_stages, overlapped_pair_s, stages_held,
                                                worst_idle_s)


def test_dualpipe_table_set_passes_every_cell():
    cases = CASE_SETS["dualpipe-table"].run()
    assert len(cases) == 92
    assert [c.case for c in cases if not c.passed] == []
    labels = {c.case.split()[0] for c in cases}
    assert labels == {"1F1B", "ZB1P", "DualPipe", "DualPipeV"}


@pytest.mark.parametrize("name, devices, parameters, activations", [
    ("1f1b", 8, 1, 8), ("zb-h1", 8, 1, 8), ("dualpipe", 8, 2, 9), ("dualpipev", 4, 2, 9)])
def test_columns_are_read_off_the_plan(name, devices, parameters, activations):
    plan = get_schedule(name).plan(devices, 40)
    assert stages_held(plan) == parameters
    assert activations_in_stages(plan) == activations


def test_overlap_lowers_the_dualpipe_bubble_as_the_formula_says():
    """With communication hidden in the F&B pairs the executed worst idle follows F&B, not F + B."""
    dual = next(m for m in METHODS if m.label == "DualPipe")
    plan = get_schedule("dualpipe").plan(8, 32)
    plain = worst_idle_s(plan, PassTimes(1.0, 1.0, 0.6))
    hidden = worst_idle_s(plan, PassTimes(1.0, 1.0, 0.6, 0.0, 0.3, 0.4))
    assert hidden < plain
    assert hidden == pytest.approx(dual.bubble(8, 1.0, 1.6, 0.6, overlapped_pair_s(1.0, 1.0, 0.6, 0.3, 0.4)))


def test_formula_is_not_exact_when_forward_and_input_gradient_differ():
    """Outside the published regime (F equal to B's input-gradient part) the formula is not the executed
    bubble — the validate set keeps to that regime and says so."""
    dual = next(m for m in METHODS if m.label == "DualPipe")
    executed = worst_idle_s(get_schedule("dualpipe").plan(4, 16), PassTimes(1.5, 1.0, 0.5))
    assert executed == pytest.approx(3.5)
    assert dual.bubble(4, 1.5, 1.5, 0.5, 3.0) == pytest.approx(3.0)
