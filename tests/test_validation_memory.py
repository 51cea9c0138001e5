"""Validation against published memory numbers: Korthikanti Fig. 1 / Fig. 7, ZeRO Table 1."""

import json

import pytest
from typer.testing import CliRunner

from distcalc.cli import app
from distcalc.validation import CASE_SETS
from distcalc.validation.base import read_validation_csv

runner = CliRunner()


def test_fig1_all_rows_both_columns_within_half_percent():
    cases = CASE_SETS["korthikanti-fig1"]()
    assert len(cases) == 16  # 8 rows x 2 columns
    for case in cases:
        assert abs(case.predicted - case.published) <= 0.005 * case.published, case


def test_fig1_matches_the_csv_check_columns_exactly_for_activations():
    rows = read_validation_csv("korthikanti2022_fig1_memory_gib_via_calculon.csv")
    predicted = {c.case: c.predicted for c in CASE_SETS["korthikanti-fig1"]()}
    for row in rows:
        assert predicted[f"{row['model']} {row['mode_calculon']} activations"] == pytest.approx(
            float(row["activations_GiB"]), rel=1e-9)


def test_fig7_within_one_point():
    cases = CASE_SETS["korthikanti-fig7"]()
    assert len(cases) == 20
    for case in cases:
        assert abs(case.predicted - case.published) <= 1.0, case


def test_zero_table1_all_rows():
    cases = CASE_SETS["zero-table1"]()
    assert len(cases) == 54
    for case in cases:
        assert case.passed, case
    # Against the formula-check column of the CSV (4 decimals), every row is exact.
    rows = read_validation_csv("zero2020_table1_model_state_memory_per_device.csv")
    for case, row in zip(cases, rows):
        check = float(row["memory_GB_formula_check_derived"])  # rounded to 4 decimals in the CSV
        assert case.predicted == pytest.approx(check, rel=1e-9, abs=5.001e-5)
    widened = [c for c in cases if c.tolerance > 0.005]
    # only values printed with 1-2 significant decimals get the printed-rounding tolerance
    assert {c.case for c in widened} == {"7.5B P_os+g+p Nd=16", "7.5B P_os+g+p Nd=256", "7.5B P_os+g+p Nd=1024"}
    strict = [c for c in cases if c.tolerance == 0.005]
    assert max(abs(c.error) for c in strict) < 0.005


def test_validate_cli_json():
    result = runner.invoke(app, ["validate", "--set", "korthikanti-fig7", "--set", "zero-table1", "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert [s["name"] for s in payload["sets"]] == ["korthikanti-fig7", "zero-table1"]
    case = payload["sets"][0]["cases"][1]
    assert {"case", "predicted", "published", "measured", "error", "tolerance", "passed"} <= case.keys()
    assert payload["passed"] is True


def test_validate_cli_table_and_unknown_set():
    result = runner.invoke(app, ["validate", "--set", "korthikanti-fig1"])
    assert result.exit_code == 0 and "16/16 within tolerance" in result.stdout
    bad = runner.invoke(app, ["validate", "--set", "nope"])
    assert bad.exit_code == 2 and "korthikanti-fig1" in bad.output
