"""Measurements on disk: the schema of a ``distcalc bench`` result file, which :mod:`distcalc.bench` writes
and :mod:`distcalc.calibration` reads (neither imports the other for it).

A result file is one JSON object::

    {"schema": "distcalc.bench/1", "theme": "collectives" | "gemm" | "training",
     "created": ISO-8601 time, "hardware": {...}, "versions": {...},
     "backend": "gloo", "world_size": 4, "config": {... every option of the run ...},
     "results": [ rows ]}

Rows of a ``collectives`` file carry ``collective``, ``tier``, ``group_size``, ``size_bytes`` (M in the NCCL /
nccl-tests convention, docs/design.md §2), ``time_s`` (median over trials), ``p99_time_s``, ``trials``,
``trial_times_s``, ``algbw_bytes_per_s`` and ``busbw_bytes_per_s``. Rows of a ``gemm`` file carry the GEMM
name, ``m``, ``n``, ``k``, ``flops``, ``time_s``, ``p99_time_s`` and ``flops_per_s``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from distcalc.errors import BenchError
from distcalc.inputs import PATH_CHARS, excerpt, read_data_file

SCHEMA = "distcalc.bench/1"
THEMES = ("collectives", "gemm", "training")


class CollectiveRow(BaseModel):
    """One measured (collective, tier, size) point of a sweep."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, strict=True)

    collective: str = Field(description="collective name as on the CLI, e.g. 'all-reduce'")
    tier: Literal["intra", "inter"] = Field("intra", description="network tier the group spans: 'intra' (one "
                                           "node) or 'inter'")
    group_size: int = Field(ge=1, description="ranks in the measured group (N)")
    size_bytes: int = Field(gt=0, description="M in the NCCL convention, bytes")
    time_s: float = Field(gt=0, description="median time of one call over the trials, seconds")
    p99_time_s: float = Field(gt=0, description="99th percentile of the trial times, seconds")
    trials: int = Field(ge=1, description="number of timed calls")
    trial_times_s: list[float] = Field(default_factory=list, description="every timed call, seconds")
    algbw_bytes_per_s: float = Field(gt=0, description="M / time_s, bytes per second")
    busbw_bytes_per_s: float = Field(ge=0, description="algbw × the nccl-tests bus factor, bytes per second")


class GemmRow(BaseModel):
    """One measured GEMM shape (m×k) · (k×n)."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False, strict=True)

    name: str = Field(description="which GEMM of the layer, e.g. 'qkv', 'mlp-up'")
    tokens: int = Field(gt=0, description="b·s, the rows of the activation matrix")
    m: int = Field(gt=0)
    n: int = Field(gt=0)
    k: int = Field(gt=0)
    flops: float = Field(gt=0, description="2·m·n·k floating-point operations")
    time_s: float = Field(gt=0, description="median time over trials, seconds")
    p99_time_s: float = Field(gt=0, description="99th percentile time, seconds")
    trials: int = Field(ge=1)
    flops_per_s: float = Field(gt=0, description="flops / time_s")


class ResultFile(BaseModel):
    """The common envelope of every bench result file."""

    model_config = ConfigDict(extra="allow")

    schema_: str = Field(SCHEMA, alias="schema")
    theme: str
    created: str
    hardware: dict[str, Any]
    versions: dict[str, Any]
    backend: str | None = None
    world_size: int = 1
    config: dict[str, Any]
    results: list[dict[str, Any]]


ROW_MODELS: dict[str, type[BaseModel]] = {"collectives": CollectiveRow, "gemm": GemmRow}


def _validation_message(path: str | Path, error: ValidationError, prefix: str = "") -> str:
    first = error.errors()[0]
    where = prefix + ".".join(str(x) for x in first.get("loc", ()))
    return (f"results file {excerpt(str(path), PATH_CHARS)} is not a distcalc bench file: field {where}: "
            f"{first['msg']} (got {excerpt(first.get('input'))})")


def load_result_file(path: str | Path) -> ResultFile:
    """Read and validate a result file (size cap, strict JSON, envelope and every row of a collectives or
    gemm sweep: positive finite times, sizes and rates); :class:`BenchError` names the file and the field."""
    data = read_data_file(path, "results file", error=BenchError, json_only=True)
    try:
        parsed = ResultFile.model_validate(data)
    except ValidationError as error:
        raise BenchError(_validation_message(path, error)) from None
    if parsed.theme not in THEMES:
        raise BenchError(f"results file {excerpt(str(path), PATH_CHARS)} has theme {excerpt(parsed.theme)}; "
                         f"valid: {', '.join(THEMES)}")
    row_model = ROW_MODELS.get(parsed.theme)
    for index, row in enumerate(parsed.results if row_model else []):
        try:
            row_model.model_validate(row)  # type: ignore[union-attr]
        except ValidationError as error:
            raise BenchError(_validation_message(path, error, f"results[{index}].")) from None
    return parsed
