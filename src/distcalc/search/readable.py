"""A searched configuration read back from its integer columns: names for recompute and schedule (the codes
of :data:`~distcalc.search.space.RECOMPUTE_CHOICES` / :data:`~distcalc.search.space.SCHEDULE_CHOICES`), bools
for the flags, ints for the degrees and sizes."""

from __future__ import annotations

import numpy as np

from distcalc.search.space import COLUMNS, RECOMPUTE_CHOICES, SCHEDULE_CHOICES, ConfigArrays

_BOOL_COLUMNS = ("sequence_parallel", "account_for_embedding_and_loss")


def config_values(name: str, values: np.ndarray) -> list:
    """One column as readable values: names for recompute/schedule, bools for sequence_parallel and
    account_for_embedding_and_loss, ints else."""
    if name == "recompute":
        return [RECOMPUTE_CHOICES[v] for v in values.tolist()]
    if name == "schedule":
        return [SCHEDULE_CHOICES[v] for v in values.tolist()]
    if name in _BOOL_COLUMNS:
        return [bool(v) for v in values.tolist()]
    return [int(v) for v in values.tolist()]


def config_row(configs: ConfigArrays, i: int) -> dict:
    """Row ``i`` as a plain dict with readable values (names for recompute/schedule, bools for the flags)."""
    return {name: config_values(name, configs[name][i:i + 1])[0] for name in COLUMNS}


__all__ = ["config_row", "config_values"]
