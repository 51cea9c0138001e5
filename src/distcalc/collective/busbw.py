"""algbw / busbw as nccl-tests reports them (shipped table ``data/validation/nccl_tests_busbw_factors.csv``).

algbw = M / time (bytes/s, M in the NCCL convention); busbw = algbw × factor, e.g. 2(n−1)/n for AllReduce.
Source: nccl-tests doc/PERFORMANCE.md and src/*.cu ``*GetBw`` (git a0b82b2) [V].
"""

from __future__ import annotations

import csv
import functools
import re
from importlib import resources

import numpy as np

_NAMES = {"all-reduce": "all_reduce", "reduce-scatter": "reduce_scatter", "all-gather": "all_gather",
          "all-to-all": "alltoall", "broadcast": "broadcast", "reduce": "reduce", "gather": "gather",
          "scatter": "scatter", "send-recv": "sendrecv"}
_FACTOR = re.compile(r"^\s*(?:(\d+)\s*\*\s*)?\(n-1\)/n\s*$")


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, str]:
    path = resources.files("distcalc") / "data" / "validation" / "nccl_tests_busbw_factors.csv"
    with path.open() as handle:
        return {row["collective"]: row["busbw_over_algbw_factor"] for row in csv.DictReader(handle)}


def busbw_factor(collective: str, gpus: int) -> float:
    """nccl-tests' busbw/algbw factor for ``collective`` (CLI spelling) on ``gpus`` ranks."""
    text = _table()[_NAMES[str(getattr(collective, "value", collective))]]
    match = _FACTOR.match(text)
    if match:
        return int(match.group(1) or 1) * (gpus - 1) / gpus
    return float(text)


def algbw_busbw(collective: str, size_bytes, time_s, gpus: int):
    """(algbw, busbw) in bytes/s; infinite (JSON null) when the time is 0 (N = 1)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        algbw = np.where(np.asarray(time_s) > 0, np.asarray(size_bytes, dtype=float) / np.asarray(time_s),
                         np.inf)
    factor = busbw_factor(collective, gpus)
    if np.ndim(algbw) == 0:
        return float(algbw), float(algbw) * factor
    return algbw, algbw * factor
