"""Sources outside the published-runs targets are listed by ``validate`` with what is known about them."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.validation import CASE_SETS, OpenGap
from distcalc.validation.published.gaps import KNOWN, NOT_ANALYSED, TARGETS
from distcalc.validation.summary import OVERALL, group_summaries

PUBLISHED = CASE_SETS["published-runs"]


def _outside(unit: str, quantity: str) -> set[str]:
    mean_target, signed_target = TARGETS[quantity]
    return {s.group for s in group_summaries(PUBLISHED.run(), PUBLISHED.skipped(), unit)
            if s.group != OVERALL and s.runnable
            and (s.mean_abs_error > mean_target or abs(s.signed_mean_error) > signed_target)}


def test_every_source_outside_a_target_is_listed_and_no_other():
    gaps = PUBLISHED.open_gaps()
    assert all(isinstance(g, OpenGap) for g in gaps)
    for unit, quantity in (("s", "step_time"), ("GiB", "peak_memory")):
        assert {g.group for g in gaps if g.quantity == quantity} == _outside(unit, quantity)
    for gap in gaps:
        assert gap.known == KNOWN.get((gap.group, gap.quantity), NOT_ANALYSED)
        mean_target, signed_target = TARGETS[gap.quantity]
        assert gap.mean_abs_error > mean_target or abs(gap.signed_mean_error) > signed_target


def test_known_entries_name_real_sources_and_quantities():
    sources = {c.group for c in PUBLISHED.run()}
    for source, quantity in KNOWN:
        assert source in sources and quantity in TARGETS


def test_validate_prints_the_gaps_table_and_json():
    runner = CliRunner()
    text = runner.invoke(app, ["validate", "--set", "published-runs"], env={"COLUMNS": "200"})
    assert text.exit_code == 0, text.output
    assert "sources outside the targets, with what is known" in text.output
    data = json.loads(runner.invoke(app, ["validate", "--set", "published-runs", "--json"]).output)
    listed = data["sets"][0]["open_gaps"]
    assert {(g["group"], g["quantity"]) for g in listed} == {(g.group, g.quantity) for g in PUBLISHED.open_gaps()}
    assert all(set(g) == {"group", "quantity", "mean_abs_error", "signed_mean_error", "known"} for g in listed)


def test_sets_without_open_gaps_print_none():
    assert CASE_SETS["korthikanti-table5"].open_gaps is None
    data = json.loads(CliRunner().invoke(app, ["validate", "--set", "korthikanti-table5", "--json"]).output)
    assert "open_gaps" not in data["sets"][0]
