"""GPU counts to search: ``--gpus N``, a list ``8,16,24`` or a doubling range ``a..b``."""

from __future__ import annotations

from distcalc.errors import ConfigError
from distcalc.units import parse_size_range

GPUS_HELP = "a GPU count (64), a list (8,16,24) or a range a..b (a, 2a, 4a, ... up to b)"


def _count(text: str, whole: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise ConfigError(f"invalid --gpus {whole!r}: {text.strip()!r} is not an integer; expected {GPUS_HELP}")
    if value < 1:
        raise ConfigError(f"invalid --gpus {whole!r}: {value} must be >= 1; expected {GPUS_HELP}")
    return value


def parse_gpu_counts(text: str | int) -> list[int]:
    """``"64"`` → [64]; ``"8,16,24"`` → [8, 16, 24]; ``"8..64"`` → [8, 16, 32, 64] (doubling from a; b is
    included when it is not on the doubling sweep). Raises :class:`ConfigError` naming the bad value."""
    whole = str(text)
    if ".." in whole:
        lo_text, hi_text = whole.split("..", 1)
        lo, hi = _count(lo_text, whole), _count(hi_text, whole)
        if hi < lo:
            raise ConfigError(f"invalid --gpus {whole!r}: upper end {hi} is below lower end {lo}")
        counts = parse_size_range(f"{lo}..{hi}")  # the doubling sweep lo, 2·lo, ... ≤ hi
        return counts if counts[-1] == hi else counts + [hi]
    return sorted({_count(part, whole) for part in whole.split(",")})


def min_gpus_candidates(gpus: int, gpus_per_node: int) -> list[int]:
    """GPU counts ``--min-gpus`` tries below a single ``--gpus N``: powers of two up to one node, then every
    whole number of nodes up to N, and N itself."""
    counts = {n for n in (2**k for k in range(0, 32)) if n <= min(gpus, gpus_per_node)}
    counts |= set(range(gpus_per_node, gpus + 1, gpus_per_node))
    counts.add(gpus)
    return sorted(counts)


__all__ = ["GPUS_HELP", "min_gpus_candidates", "parse_gpu_counts"]
