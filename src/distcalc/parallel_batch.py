"""The batch (vectorised) form of :class:`~distcalc.parallel.ParallelConfig`, derived from its fields.

The step-time model (:func:`distcalc.analyze.evaluate_batch`), the memory model
(:func:`distcalc.memory.memory_batch`) and the search's configuration columns take many configurations at
once as one integer array per field. Those *batch fields* are the fields of ``ParallelConfig`` itself, with
the same names and defaults, except three that the batch form does not carry:

* ``gpus`` — it is ``tp·pp·cp·dp`` (derived);
* ``distributed_optimizer`` — folded into ``zero``, which is the effective ZeRO stage
  (:attr:`~distcalc.parallel.ParallelConfig.zero_stage`: the distributed optimizer counts as stage 1);
* ``dtype`` — one per call (the kernels' precision), not per row.

Encodings: an enum field is its integer :attr:`~distcalc.parallel.CodedEnum.code`, a flag 0/1, an optional
count (``first_stage_layers``, ``last_stage_layers``) 0 when not given. The defaults that depend on other
fields are the ones :class:`~distcalc.parallel.ParallelConfig` applies, written once for scalars and arrays
(:func:`~distcalc.parallel.default_global_batch`, :func:`~distcalc.parallel.default_schedule_code`).
"""

from __future__ import annotations

from enum import Enum
from typing import Any

import numpy as np

from distcalc.parallel import CodedEnum, ParallelConfig, default_global_batch, default_schedule_code

#: ParallelConfig fields the batch form leaves out (see the module docstring), with why.
NOT_BATCH_FIELDS = {"gpus": "tp·pp·cp·dp", "distributed_optimizer": "folded into zero",
                    "dtype": "one per call"}
#: Batch fields whose default depends on other fields (None here; :func:`normalise_batch` resolves them).
DERIVED_DEFAULTS = ("dp", "global_batch", "schedule")


def _batch_default(name: str) -> Any:
    if name in DERIVED_DEFAULTS:
        return None
    default = ParallelConfig.model_fields[name].default
    if isinstance(default, CodedEnum):
        return default.code
    if isinstance(default, Enum):  # pragma: no cover - every batch enum is coded
        raise TypeError(f"batch field {name} has no integer code")
    if default is None:  # an optional count: 0 means "not given"
        return 0
    return int(default)


#: Batch fields (NumPy arrays or scalars, broadcast together) and their defaults, in ParallelConfig's order.
BATCH_FIELDS: dict[str, Any] = {name: _batch_default(name) for name in ParallelConfig.model_fields
                                if name not in NOT_BATCH_FIELDS}


def normalise_batch(batch: dict[str, Any]) -> dict[str, np.ndarray]:
    """Broadcast the batch fields to one shape (int64 arrays, read-only views where no copy is needed),
    filling the defaults of :class:`~distcalc.parallel.ParallelConfig`: ``dp`` 1 (the batch form has no GPU
    count to derive it from), ``schedule`` interleaved where vpp > 1 else 1f1b, ``global_batch``
    ``micro_batch·dp·m`` with m = 2·pp micro-batches (1 without pipelining). :class:`KeyError` naming an
    unknown field and the valid ones."""
    unknown = set(batch) - set(BATCH_FIELDS)
    if unknown:
        raise KeyError(f"unknown batch fields {sorted(unknown)}; valid: {', '.join(BATCH_FIELDS)}")
    values = {k: batch.get(k, default) for k, default in BATCH_FIELDS.items()}
    if values["dp"] is None:
        values["dp"] = 1
    if values["schedule"] is None:
        values["schedule"] = default_schedule_code(values["vpp"])
    if values["global_batch"] is None:
        values["global_batch"] = default_global_batch(values["micro_batch"], values["dp"], values["pp"])
    arrays = np.broadcast_arrays(*[np.asarray(v, dtype=np.int64) for v in values.values()])
    return dict(zip(values, arrays))


def config_batch(config: ParallelConfig) -> dict[str, Any]:
    """The batch fields of one :class:`ParallelConfig` (plain ints)."""
    values: dict[str, Any] = {}
    for name in BATCH_FIELDS:
        value = getattr(config, name)
        if isinstance(value, CodedEnum):
            value = value.code
        values[name] = int(value or 0)
    values.update(dp=config.data_parallel, zero=config.zero_stage, schedule=config.resolved_schedule.code)
    return values


def field_values(name: str) -> tuple[int, ...]:
    """Every value an integer field with both bounds allows (``zero``: 0, 1, 2, 3), from its constraints."""
    bounds = {type(m).__name__: m for m in ParallelConfig.model_fields[name].metadata}
    return tuple(range(bounds["Ge"].ge, bounds["Le"].le + 1))


def configs_batch(configs: list[ParallelConfig]) -> dict[str, np.ndarray]:
    """The batch fields of several configurations, one row each (int64 arrays)."""
    rows = [config_batch(c) for c in configs]
    return {name: np.array([row[name] for row in rows], dtype=np.int64) for name in BATCH_FIELDS}


__all__ = ["BATCH_FIELDS", "NOT_BATCH_FIELDS", "config_batch", "configs_batch", "field_values", "normalise_batch"]
