"""Calibration: fit distcalc's constants to ``distcalc bench`` measurements and apply them.

* :func:`calibrate` turns one or more bench result files (or nccl-tests stdout logs,
  :mod:`.nccl_tests`) into a :class:`Calibration` — per collective and
  tier, α and B in the collective model's own terms (:mod:`.collectives`, fitted by :mod:`.fit`), and, from
  a GEMM sweep, the parameters of the compute model's GEMM efficiency curve (:mod:`.compute`).
* :func:`save_calibration` / :func:`load_calibration` write and read the calibration file (JSON).
* :func:`calibrated_topology` is what every command with ``--calibration FILE`` calls: it returns the
  topology with α and B replaced by the fitted values for one collective (``analyze``/``search``: call it
  once per collective kind of each communication group; hierarchical topologies get the ``intra`` fit on
  the NVLink tier and the ``inter`` fit on the network tier). :func:`calibrated_device` does the same for
  :class:`distcalc.compute.DeviceCompute`.

File format (``distcalc.calibration/1``)::

    {"schema": "distcalc.calibration/1", "created": ..., "sources": [result files],
     "hardware": {...}, "backend": "gloo", "world_size": 4,
     "fits": [{"collective", "tier", "group_size", "algorithm", "topology", "latency_s",
               "bandwidth_bytes_per_s", "steps", "bandwidth_factor", "segments": [...],
               "rms_relative_error", "decision", "residuals": [{"size_bytes", "measured_s", "predicted_s",
               "relative_error", "relative_spread"}]}],
     "compute": null | {"device", "peak_flops_per_s", "gemm_core_efficiency", ..., "residuals": [...]}}
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from distcalc.calibration.collectives import CollectiveFit, fit_sweep
from distcalc.errors import ConfigError

SCHEMA = "distcalc.calibration/1"

__all__ = ["Calibration", "CollectiveFit", "calibrate", "calibrated_device", "calibrated_topology",
           "load_calibration", "save_calibration"]


class Calibration(BaseModel):
    """A calibration file in memory (see the module docstring)."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    schema_: str = Field(SCHEMA, alias="schema")
    created: str = ""
    # Empty defaults as values, which pydantic copies for each instance ("Fields with non-hashable default
    # values", pydantic docs): a builtin default_factory would make pydantic read list's signature through
    # inspect, which compiles the tokenizer's patterns (~14 M instructions) in every command that builds this.
    sources: list[str] = []
    hardware: dict[str, Any] = {}
    backend: str | None = None
    world_size: int | None = None
    fits: list[dict[str, Any]] = Field([], description="collective fits (CollectiveFit.as_dict)")
    compute: dict[str, Any] | None = Field(None, description="GEMM efficiency fit")

    def collective_fits(self) -> list[CollectiveFit]:
        """The fits as :class:`CollectiveFit` objects."""
        names = {f.name for f in dataclasses.fields(CollectiveFit)}
        return [CollectiveFit(**{k: v for k, v in fit.items() if k in names}) for fit in self.fits]

    def fit_for(self, collective: str, tier: str = "intra") -> CollectiveFit | None:
        """The fit of ``collective`` on ``tier``; falls back to the other tier, then to the all-reduce fit
        (a calibration measures the collectives a stack runs; gather/scatter borrow all-reduce's α and B)."""
        fits = self.collective_fits()
        for want_collective in (collective, "all-reduce"):
            for want_tier in (tier, "intra", "inter"):
                for fit in fits:
                    if fit.collective == want_collective and fit.tier == want_tier:
                        return fit
        return fits[0] if fits else None


def calibrate(paths: list[str | Path]) -> Calibration:
    """Fit every result file in ``paths`` (collective sweeps and/or GEMM sweeps) into one calibration."""
    from distcalc.measurements import load_result_file

    from distcalc.calibration.nccl_tests import busbw_geomean_error, fit_run, is_nccl_tests_output, parse_nccl_tests

    calibration = Calibration(created=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    for path in paths:
        if is_nccl_tests_output(path):  # nccl-tests stdout: one fit per run, α and B per protocol regime
            runs = parse_nccl_tests(Path(path).read_text(errors="replace"))
            calibration.sources.append(str(path))
            calibration.backend, calibration.world_size = "nccl", runs[-1].ranks
            calibration.hardware = calibration.hardware or {"gpu": runs[0].gpu, "nodes": runs[0].nodes}
            for run in runs:
                fit = fit_run(run)
                calibration.fits.append(dict(fit.as_dict(), source="nccl-tests", nodes=run.nodes,
                                             gpus_per_thread=run.gpus_per_thread,
                                             busbw_geomean_error=busbw_geomean_error(fit)))
            continue
        result = load_result_file(path)
        calibration.sources.append(str(path))
        calibration.hardware = calibration.hardware or result.hardware
        if result.theme == "collectives":
            calibration.backend, calibration.world_size = result.backend, result.world_size
            calibration.fits.extend(fit.as_dict() for fit in fit_sweep(result.results, result.backend or "gloo"))
        elif result.theme == "gemm":
            from distcalc.calibration.compute import fit_gemm

            calibration.compute = fit_gemm(result.results, result.config, result.hardware)
        else:
            raise ConfigError(f"{str(path)!r} is a {result.theme!r} result; calibrate takes collectives or gemm files")
    return calibration


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value


def save_calibration(calibration: Calibration, path: str | Path) -> Path:
    """Write the calibration as JSON (infinite values — a segment without a slope — become null)."""
    from distcalc.outputs import JSON_SUFFIXES, check_output_path, write_text

    target = check_output_path(path, "--output", JSON_SUFFIXES)
    return write_text(target, json.dumps(_finite(calibration.model_dump(by_alias=True)), indent=2) + "\n", "--output")


def _restore_infinity(fit: dict[str, Any]) -> dict[str, Any]:
    for segment in fit.get("segments", []):
        for key in ("max_size_bytes", "bandwidth_bytes_per_s"):
            if segment.get(key) is None:
                segment[key] = math.inf
    return fit


def load_calibration(path: str | Path) -> Calibration:
    """Read a calibration file; :class:`ConfigError` names the file and the problem."""
    from distcalc.calibration.schema import check_calibration_data
    from distcalc.inputs import read_data_file

    data = read_data_file(path, "calibration file", error=ConfigError, json_only=True)
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ConfigError(f"{str(path)!r} is not a distcalc calibration file (expected schema {SCHEMA!r}; "
                          "make one with: distcalc calibrate RESULTS.json --output FILE)")
    try:
        calibration = Calibration.model_validate(data)
    except ValidationError as error:
        raise ConfigError(f"calibration file {str(path)!r} is malformed: {error.errors()[0]['msg']}") from None
    check_calibration_data(data, path)
    calibration.fits = [_restore_infinity(fit) for fit in calibration.fits]
    if calibration.compute:  # an efficiency or bandwidth saved as null was infinite (no such term in the fit)
        for section in ("device_constants", "parameters"):
            values = calibration.compute.get(section, {})
            for key, value in values.items():
                if value is None and key != "name":
                    values[key] = math.inf
    return calibration


def calibrated_topology(topology: Any, collective: str | Any, calibration: Calibration,
                        size_bytes: float | None = None) -> Any:
    """``topology`` with α and B replaced by the calibration's fit for ``collective``.

    Flat topologies (ring, switch, tree, mesh, torus) take the ``intra`` fit (or the only tier measured);
    hierarchical topologies take ``intra`` for B1/α1 and ``inter`` for B2/α2 (a tier that was not measured
    keeps its value). ``size_bytes`` picks the segment of a two-segment fit (default: the large-message one).
    Raises :class:`ConfigError` if the calibration has no collective fits.
    """
    from distcalc.topology import TopologyKind

    kind = getattr(collective, "value", str(collective))
    intra = calibration.fit_for(kind, "intra")
    if intra is None:
        raise ConfigError("the calibration file has no collective fits (calibrate a 'bench collectives' result)")
    changes: dict[str, float] = {}
    hierarchical = topology.kind == TopologyKind.HIERARCHICAL
    tiers = {fit.tier for fit in calibration.collective_fits()}
    if not hierarchical or "intra" in tiers:
        segment = intra.segment_for(size_bytes)
        changes.update(latency_s=segment["latency_s"], bandwidth_bytes_per_s=segment["bandwidth_bytes_per_s"])
    if hierarchical and "inter" in tiers:
        segment = calibration.fit_for(kind, "inter").segment_for(size_bytes)  # type: ignore[union-attr]
        changes.update(inter_latency_s=segment["latency_s"],
                       inter_bandwidth_bytes_per_s=segment["bandwidth_bytes_per_s"])
    return dataclasses.replace(topology, **changes)


def calibrated_device(device: Any, calibration: Calibration) -> Any:
    """A :class:`distcalc.compute.DeviceCompute` with the GEMM-efficiency parameters of the calibration's
    ``compute`` fit (unchanged if the calibration has none)."""
    if not calibration.compute:
        return device
    names = {f.name for f in dataclasses.fields(device)}
    updates = {k: v for k, v in calibration.compute.get("parameters", {}).items() if k in names}
    return dataclasses.replace(device, **updates)
