"""Field checks of a calibration file read from disk (``distcalc.calibration/1``).

A calibration replaces α and B in every cost distcalc computes, so a hand-edited or corrupted file must not
get through: a negative bandwidth made ``search`` rank a −298 s step as best. Every number the model uses is
checked for type, sign and finiteness (:func:`distcalc.inputs.require_number`); ``null`` is accepted where
:func:`distcalc.calibration.save_calibration` writes it for an infinite value (a segment without an upper
size or without a size term, an efficiency without a memory term).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from distcalc.errors import ConfigError
from distcalc.inputs import excerpt, field_error, require_int, require_number

TIERS = ("intra", "inter")
#: Segment fields: (may be null, must be strictly positive).
SEGMENT_FIELDS = {"min_size_bytes": (False, False), "max_size_bytes": (True, True), "intercept_s": (False, False),
                  "seconds_per_byte": (False, False), "latency_s": (False, False),
                  "bandwidth_bytes_per_s": (True, True)}
#: Per-fit numbers (optional; where present they must be finite and non-negative / positive).
FIT_NUMBERS = {"latency_s": (False, False), "bandwidth_bytes_per_s": (True, True), "steps": (False, False),
               "bandwidth_factor": (False, False), "rms_relative_error": (False, False)}
#: GEMM-fit parameters (null = infinite efficiency: that term is absent from the fit).
COMPUTE_PARAMETERS = {"gemm_core_efficiency": (True, True), "memory_efficiency": (True, True),
                      "kernel_overhead_s": (False, False)}


def _number(value: Any, nullable: bool, positive: bool) -> str | None:
    return require_number(value, low=0.0, low_open=positive, allow_none=nullable)


def _check_numbers(record: dict[str, Any], rules: dict[str, tuple[bool, bool]], where: str, path: Any,
                   required: bool) -> None:
    for key, (nullable, positive) in rules.items():
        if key not in record:
            if required:
                raise field_error(ConfigError, "calibration file", path, f"{where}.{key}", "is missing")
            continue
        problem = _number(record[key], nullable, positive)
        if problem:
            raise field_error(ConfigError, "calibration file", path, f"{where}.{key}", problem)


def _check_fit(fit: Any, where: str, path: Any) -> None:
    if not isinstance(fit, dict):
        raise field_error(ConfigError, "calibration file", path, where, f"must be an object, got {excerpt(fit)}")
    for key in ("collective", "tier"):
        if not isinstance(fit.get(key), str):
            raise field_error(ConfigError, "calibration file", path, f"{where}.{key}",
                              f"must be text, got {excerpt(fit.get(key))}")
    if fit["tier"] not in TIERS:
        raise field_error(ConfigError, "calibration file", path, f"{where}.tier",
                          f"must be one of {', '.join(TIERS)}, got {excerpt(fit['tier'])}")
    problem = require_int(fit.get("group_size"), low=1)
    if problem:
        raise field_error(ConfigError, "calibration file", path, f"{where}.group_size", problem)
    _check_numbers(fit, FIT_NUMBERS, where, path, required=False)
    segments = fit.get("segments")
    if not isinstance(segments, list) or not segments:
        raise field_error(ConfigError, "calibration file", path, f"{where}.segments",
                          "must be a non-empty list of fitted segments")
    for index, segment in enumerate(segments):
        at = f"{where}.segments[{index}]"
        if not isinstance(segment, dict):
            raise field_error(ConfigError, "calibration file", path, at, f"must be an object, got {excerpt(segment)}")
        _check_numbers(segment, {k: SEGMENT_FIELDS[k] for k in ("latency_s", "bandwidth_bytes_per_s")}, at, path,
                       required=True)
        _check_numbers(segment, SEGMENT_FIELDS, at, path, required=False)


def check_calibration_data(data: dict[str, Any], path: str | Path) -> None:
    """Raise :class:`ConfigError` naming the file and the first field that is missing, of the wrong type,
    negative or not finite."""
    fits = data.get("fits", [])
    if not isinstance(fits, list):
        raise field_error(ConfigError, "calibration file", path, "fits", "must be a list")
    for index, fit in enumerate(fits):
        _check_fit(fit, f"fits[{index}]", path)
    compute = data.get("compute")
    if compute is None:
        return
    if not isinstance(compute, dict) or not isinstance(compute.get("parameters"), dict):
        raise field_error(ConfigError, "calibration file", path, "compute.parameters", "must be an object")
    _check_numbers(compute["parameters"], COMPUTE_PARAMETERS, "compute.parameters", path, required=False)
    constants = compute.get("device_constants", {})
    if not isinstance(constants, dict):
        raise field_error(ConfigError, "calibration file", path, "compute.device_constants", "must be an object")
    numeric = {key: (True, True) for key, value in constants.items() if key != "name"}
    _check_numbers(constants, numeric, "compute.device_constants", path, required=False)
