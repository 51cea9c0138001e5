"""Parse and format sizes, rates and times.

Conventions (docs/design.md §2): sizes are bytes, times seconds, rates bytes per second.
SI prefixes are powers of 1000 (``GB`` = 1e9), IEC prefixes powers of 1024 (``GiB`` = 2**30).
Rates accept bytes (``450GB/s``, ``50 GiB/s``) and bits (``400Gbps``, ``400Gb/s`` = 50e9 B/s).
"""

from __future__ import annotations

import math
import re

from distcalc.errors import UnitParseError

_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_IEC = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60}

_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)"
_SIZE_RE = re.compile(rf"^\s*{_NUMBER}\s*(?P<prefix>(?:[KMGTPE]i)|[kKMGTPE])?(?P<unit>B|b|bytes?|)\s*$")
_RATE_RE = re.compile(
    rf"^\s*{_NUMBER}\s*(?P<prefix>(?:[KMGTPE]i)|[kKMGTPE])?"
    r"(?P<unit>B/s|Bps|bytes?/s|b/s|bps|bit/s|bits/s)?\s*$"
)
# (multiplier, divisor): dividing by 1e6 gives exactly 5e-06 for "5us", multiplying by 1e-6 does not.
_TIME_UNITS = {"s": (1.0, 1.0), "ms": (1.0, 1e3), "us": (1.0, 1e6), "µs": (1.0, 1e6), "μs": (1.0, 1e6),
               "ns": (1.0, 1e9), "min": (60.0, 1.0), "h": (3600.0, 1.0)}
_TIME_RE = re.compile(rf"^\s*{_NUMBER}\s*(?P<unit>s|ms|us|µs|μs|ns|min|h)?\s*$")

MIB = 2**20  # bytes in one MiB
GIB = 2**30  # bytes in one GiB

SIZE_HELP = "a size such as 1GiB, 256MB, 1e9 or 1048576 (bytes; SI = 1000^k, IEC = 1024^k)"
RATE_HELP = "a rate such as 450GB/s, 50GiB/s or 400Gbps (bits)"
TIME_HELP = "a time such as 5us, 1.5ms or 2e-6 (seconds)"


def _multiplier(prefix: str | None) -> float:
    if not prefix:
        return 1.0
    return _IEC[prefix] if prefix.endswith("i") else _SI[prefix]


def parse_size(text: str | int | float, *, allow_zero: bool = False) -> int:
    """Parse a size into bytes (int). ``1GiB`` → 1073741824, ``256MB`` → 256000000, ``1e9`` → 1e9.

    Raises :class:`UnitParseError` for negative, non-finite, fractional-byte or unrecognised input.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        match = _SIZE_RE.match(str(text))
        if not match or (match.group("unit") == "b"):
            raise UnitParseError(f"invalid size {text!r}: expected {SIZE_HELP}")
        value = float(match.group("num")) * _multiplier(match.group("prefix"))
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise UnitParseError(f"invalid size {text!r}: must be a positive number of bytes ({SIZE_HELP})")
    rounded = round(value)
    if abs(rounded - value) > 1e-6 * max(1.0, value):
        raise UnitParseError(f"invalid size {text!r}: {value} is not a whole number of bytes")
    return int(rounded)


def parse_size_range(text: str) -> list[int]:
    """Parse ``LO..HI`` into the powers-of-two sweep LO, 2·LO, …, ≤ HI (both ends parsed by :func:`parse_size`).

    A single size returns a one-element list.
    """
    if ".." not in str(text):
        return [parse_size(text)]
    lo_text, hi_text = str(text).split("..", 1)
    lo, hi = parse_size(lo_text), parse_size(hi_text)
    if hi < lo:
        raise UnitParseError(f"invalid size range {text!r}: upper end {hi} B is below lower end {lo} B")
    sizes = []
    size = lo
    while size <= hi:
        sizes.append(size)
        size *= 2
    return sizes


def parse_rate(text: str | int | float) -> float:
    """Parse a rate into bytes per second. ``450GB/s`` → 4.5e11; ``400Gbps`` → 5e10; a bare number is B/s."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        match = _RATE_RE.match(str(text))
        if not match:
            raise UnitParseError(f"invalid rate {text!r}: expected {RATE_HELP}")
        unit = match.group("unit") or "B/s"
        bits = unit in ("b/s", "bps", "bit/s", "bits/s")
        value = float(match.group("num")) * _multiplier(match.group("prefix")) / (8.0 if bits else 1.0)
    if not math.isfinite(value) or value <= 0:
        raise UnitParseError(f"invalid rate {text!r}: must be positive ({RATE_HELP})")
    return value


def parse_time(text: str | int | float, *, allow_zero: bool = True) -> float:
    """Parse a time into seconds. ``5us`` → 5e-6, ``1.5ms`` → 1.5e-3; a bare number is seconds."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        match = _TIME_RE.match(str(text))
        if not match:
            raise UnitParseError(f"invalid time {text!r}: expected {TIME_HELP}")
        multiplier, divisor = _TIME_UNITS[match.group("unit") or "s"]
        value = float(match.group("num")) * multiplier / divisor
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise UnitParseError(f"invalid time {text!r}: must be a non-negative time ({TIME_HELP})")
    return value


def _format_scaled(value: float, base: float, prefixes: list[str], suffix: str, digits: int) -> str:
    index = 0
    magnitude = abs(value)
    while index < len(prefixes) - 1 and magnitude >= base:
        magnitude /= base
        value /= base
        index += 1
    return f"{value:.{digits}g} {prefixes[index]}{suffix}"


def format_size(size_bytes: float, *, binary: bool = True, digits: int = 4) -> str:
    """Format bytes: ``format_size(2**30)`` → ``'1 GiB'``; ``binary=False`` uses SI (``'1.074 GB'``)."""
    if binary:
        return _format_scaled(float(size_bytes), 1024.0, ["", "Ki", "Mi", "Gi", "Ti", "Pi"], "B", digits)
    return _format_scaled(float(size_bytes), 1000.0, ["", "k", "M", "G", "T", "P"], "B", digits)


def format_rate(bytes_per_s: float, *, digits: int = 4) -> str:
    """Format a rate in SI bytes per second: ``4.5e11`` → ``'450 GB/s'``."""
    return _format_scaled(float(bytes_per_s), 1000.0, ["", "k", "M", "G", "T", "P"], "B/s", digits)


def format_time(seconds: float, *, digits: int = 4) -> str:
    """Format seconds with the largest unit that keeps the value ≥ 1: ``5e-6`` → ``'5 us'``."""
    magnitude = abs(seconds)
    if magnitude == 0:
        return "0 s"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if magnitude >= scale:
            return f"{seconds / scale:.{digits}g} {unit}"
    return f"{seconds / 1e-9:.{digits}g} ns"
