"""Up-front checks of command-line values: numeric ranges, output paths, and one-line usage errors.

Every command calls :func:`check_ranges` (and :func:`distcalc.outputs.check_output_path` for what it writes)
before any work starts, so a bad value costs nothing and is reported as one ``error:`` line with exit code 2.
:class:`distcalc.cli.style.DistcalcGroup` does the same for the errors click itself raises (``--gpus abc``,
unknown option), quoting the value given (:func:`given_value`).

The limits are sanity bounds, not physics: :data:`MAX_GPUS` (2^20 = 1,048,576) is five times the largest
GPU cluster built to date (xAI Colossus, 200,000 GPUs, 2025) and keeps every per-GPU structure of the
topology code (placement, torus shape search) within seconds; see REFERENCES.md "Input limits".
"""

from __future__ import annotations

import math
import os
from typing import Any, Iterable

from distcalc.errors import ConfigError

#: Largest GPU count / parallel degree / group size any command accepts.
MAX_GPUS = 1 << 20
#: Most GPU counts one search evaluates (a list, a range or the --min-gpus candidates).
MAX_GPU_COUNTS = 256
#: Largest sequence length in tokens (16 M; the longest published context windows are 10 M).
MAX_SEQ_LEN = 1 << 24
#: Largest micro-batch or global batch in sequences.
MAX_BATCH = 1 << 30
#: Largest token budget for time-to-train (1e18 tokens: 10^4 × the 15e12 of Llama 3).
MAX_TOKENS = 1e18
#: Largest bench timeout: one day without progress.
MAX_TIMEOUT_S = 86_400.0
#: Most local bench ranks spawned on one host.
MAX_LOCAL_RANKS = 256
#: Largest warm-up/trial/step count of a bench run.
MAX_REPEATS = 1_000_000


def check_int(value: int | None, option: str, low: int, high: int, upper_only: bool = False) -> None:
    """:class:`ConfigError` ``--opt N is out of range; valid: low..high`` (None = not given: fine; with
    ``upper_only`` a value below ``low`` is left to the library, which names the field itself)."""
    if value is not None and upper_only and value < low:
        return
    if value is not None and not low <= value <= high:
        raise ConfigError(f"{option} {value} is out of range; valid: {low}..{high:,}")


def check_float(value: float | None, option: str, low: float, high: float, *, low_open: bool = False,
                high_open: bool = False) -> None:
    """:class:`ConfigError` unless ``value`` is finite and within the interval (None = not given: fine)."""
    if value is None:
        return
    inside = math.isfinite(value) and (low < value if low_open else low <= value) and (
        value < high if high_open else value <= high)
    if not inside:
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ConfigError(f"{option} {value:g} is out of range; valid: a finite number in {interval}")


def check_ranges(rules: Iterable[tuple[str, Any, float, float]], upper_only: bool = False) -> None:
    """Check ``(option, value, low, high)`` rules: ints as :func:`check_int`, floats as :func:`check_float`
    (``upper_only``: integers only above ``high``; the training commands' library checks the lower ends with
    the same message the web API gives)."""
    for option, value, low, high in rules:
        if isinstance(value, float):
            check_float(value, option, low, high)
        else:
            check_int(value, option, int(low), int(high), upper_only)


def gpu_rules(**options: int | None) -> list[tuple[str, Any, float, float]]:
    """``1..MAX_GPUS`` rules for GPU counts and parallel degrees given by keyword (``tp=2`` → ``--tp``)."""
    return [(f"--{name.replace('_', '-')}", value, 1, MAX_GPUS) for name, value in options.items()]


def given_value(arguments: list[str], names: Iterable[str]) -> str | None:
    """The value given on the command line to the option called one of ``names`` (last one wins)."""
    found = None
    for index, argument in enumerate(arguments):
        for name in names:
            if argument == name and index + 1 < len(arguments):
                found = arguments[index + 1]
            elif argument.startswith(name + "="):
                found = argument[len(name) + 1:]
    return found


def check_gpu_counts(counts: list[int], option: str) -> list[int]:
    """A search's GPU counts: each in ``1..MAX_GPUS``, at most :data:`MAX_GPU_COUNTS` of them."""
    if len(counts) > MAX_GPU_COUNTS:
        raise ConfigError(f"{option}: {len(counts):,} GPU counts to search; valid: at most {MAX_GPU_COUNTS} "
                          "(give a shorter list or range, or fewer GPUs)")
    for count in counts:
        check_int(count, option, 1, MAX_GPUS)
    return counts


def host_memory_bytes() -> int:
    """Physical memory of this machine (``sysconf``; 16 GiB where unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 16 << 30


def check_host_memory(need_bytes: float, what: str, ranks: int = 1) -> None:
    """Refuse a bench run whose buffers need more than half of this machine's memory (split over ``ranks``
    local processes): it would be killed by the kernel or swap the host, not measure anything."""
    budget = host_memory_bytes() / 2 / max(ranks, 1)
    if need_bytes > budget:
        raise ConfigError(f"{what} needs about {need_bytes / 2**30:.1f} GiB per rank, more than half of this "
                          f"machine's memory per rank ({budget / 2**30:.1f} GiB over {ranks} rank(s))")


def training_rules(*, micro_batch: int | None = None, global_batch: int | None = None, seq_len: int | None = None,
                   **degrees: int | None) -> list[tuple[str, Any, float, float]]:
    """Rules of the training options shared by memory, analyze and search: degrees and GPU counts
    (keywords, ``1..MAX_GPUS``), batches (``1..MAX_BATCH``) and the sequence length (``1..MAX_SEQ_LEN``)."""
    return [*gpu_rules(**degrees), ("--micro-batch", micro_batch, 1, MAX_BATCH),
            ("--global-batch", global_batch, 1, MAX_BATCH), ("--seq-len", seq_len, 1, MAX_SEQ_LEN)]
