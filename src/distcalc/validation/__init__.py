"""Validation against published numbers (``distcalc validate``).

``CASE_SETS`` maps a case-set name to a :class:`CaseSet` (callable: returns a list of
:class:`ValidationCase`). Case sets live in the modules named in :data:`CASE_SET_MODULES`; each module
defines ``CASE_SETS``, a tuple of :class:`CaseSet`. To register a new module, append its name here.
"""

from __future__ import annotations

import importlib
import importlib.util

from distcalc.validation.base import CaseSet, OpenGap, SkippedCase, ValidationCase, read_validation_csv

# Modules holding case sets, in display order. Register a module by adding its name (one line).
CASE_SET_MODULES: tuple[str, ...] = (
    "distcalc.validation.memory_cases",
    "distcalc.validation.end_to_end",
    "distcalc.validation.h100_runs",
    "distcalc.validation.gpu_kernels",
    "distcalc.validation.published",
    "distcalc.validation.nccl_busbw",
    "distcalc.validation.nccl_multinode",
    "distcalc.validation.nccl_a100_logs",
    "distcalc.validation.zero_bubble",
    "distcalc.validation.dualpipe_table",
)


def _collect() -> dict[str, CaseSet]:
    registry: dict[str, CaseSet] = {}
    for module_name in CASE_SET_MODULES:
        if importlib.util.find_spec(module_name) is None:  # a module another issue has not written yet
            continue
        for case_set in importlib.import_module(module_name).CASE_SETS:
            registry[case_set.name] = case_set
    return registry


CASE_SETS: dict[str, CaseSet] = _collect()

__all__ = ["CASE_SETS", "CASE_SET_MODULES", "CaseSet", "OpenGap", "SkippedCase", "ValidationCase",
           "read_validation_csv"]
