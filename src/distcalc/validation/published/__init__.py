"""Validation against published measured training runs (``distcalc validate --set published-runs``).

:mod:`~distcalc.validation.published.rows` reads the CSV into typed records, :mod:`.mapping` describes each
run to distcalc (the readable rules a user would follow), :mod:`.compare` runs the model and pairs each
prediction with its measurement.
"""

from distcalc.validation.published.compare import CASE_SETS, RunComparison, comparisons

__all__ = ["CASE_SETS", "RunComparison", "comparisons"]
