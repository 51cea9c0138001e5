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
# Patterns, compiled by the re module's cache on first use rather than at import (the command line's start-up
# imports this module; most runs parse no unit).
_SIZE_RE = rf"^\s*{_NUMBER}\s*(?P<prefix>(?:[KMGTPE]i)|[kKMGTPE])?(?P<unit>B|b|bytes?|)\s*$"
_RATE_RE = (rf"^\s*{_NUMBER}\s*(?P<prefix>(?:[KMGTPE]i)|[kKMGTPE])?"
            r"(?P<unit>B/s|Bps|bytes?/s|b/s|bps|bit/s|bits/s)?\s*$")
# (multiplier, divisor): dividing by 1e6 gives exactly 5e-06 for "5us", multiplying by 1e-6 does not.
_TIME_UNITS = {"s": (1.0, 1.0), "ms": (1.0, 1e3), "us": (1.0, 1e6), "µs": (1.0, 1e6), "μs": (1.0, 1e6),
               "ns": (1.0, 1e9), "min": (60.0, 1.0), "h": (3600.0, 1.0), "d": (86400.0, 1.0),
               "days": (86400.0, 1.0)}
_TIME_RE = rf"^\s*{_NUMBER}\s*(?P<unit>s|ms|us|µs|μs|ns|min|h|days|d)?\s*$"
_SPLIT_RE = rf"^\s*{_NUMBER}\s*(?P<rest>.*?)\s*$"
_PREFIXES = ("", "k", "K", "M", "G", "T", "P", "Ki", "Mi", "Gi", "Ti", "Pi")
SIZE_UNITS = tuple(f"{p}B" for p in _PREFIXES)
RATE_UNITS = tuple(f"{p}B/s" for p in _PREFIXES) + tuple(f"{p}bps" for p in _PREFIXES if "i" not in p)
TIME_UNITS = ("ns", "us", "ms", "s", "min", "h", "days")
#: A bare number typed for an option is taken as bytes (B/s) only from these values up; below, it is far more
#: likely a count of MiB or GB/s with the unit forgotten (``--bandwidth 400``), so it is refused.
BARE_SIZE_MIN_BYTES = 1024
BARE_RATE_MIN_BYTES_PER_S = 1e6

MIB = 2**20  # bytes in one MiB
GIB = 2**30  # bytes in one GiB

SIZE_HELP = "a size such as 1GiB, 256MB, 1e9 or 1048576 (bytes; SI = 1000^k, IEC = 1024^k)"
RATE_HELP = "a rate such as 450GB/s, 50GiB/s or 400Gbps (bits)"
TIME_HELP = "a time such as 5us, 1.5ms, 20s, 10min, 2h or 2e-6 (seconds)"


def unit_hint(text: str, units: tuple[str, ...]) -> str:
    """`` (did you mean '1GiB'?)`` when ``text``'s unit is a unit of ``units`` typed in the wrong case or
    misspelt (difflib), else ``""``."""
    match = re.match(_SPLIT_RE, str(text))
    if not match or not match.group("rest"):
        return ""
    number, unit = match.group("num"), match.group("rest").replace(" ", "")
    hits = [u for u in units if u.lower() == unit.lower() and u != unit]
    if not hits:
        from difflib import get_close_matches

        hits = get_close_matches(unit, units, n=2, cutoff=0.6)
    return (" (did you mean " + " or ".join(repr(f"{number}{u}") for u in hits) + "?)") if hits else ""


def require_unit(text: str, what: str) -> None:
    """Refuse a bare number too small to be meant as bytes: ``what`` is ``"size"`` (below
    :data:`BARE_SIZE_MIN_BYTES`, 0 allowed) or ``"rate"`` (below :data:`BARE_RATE_MIN_BYTES_PER_S`).
    Command-line options call this before :func:`parse_size` / :func:`parse_rate`; files do not."""
    for part in str(text).split(".."):
        match = re.match(_SPLIT_RE, part)
        if not match or match.group("rest"):
            continue
        value = float(match.group("num"))
        if what == "rate" and 0 < value < BARE_RATE_MIN_BYTES_PER_S:
            raise UnitParseError(f"invalid rate {text!r}: a bare number would be {value:g} B/s; give the unit, "
                                 f"e.g. {part.strip()}GB/s (bytes) or {part.strip()}Gbps (bits)")
        if what == "size" and 0 < value < BARE_SIZE_MIN_BYTES:
            raise UnitParseError(f"invalid size {text!r}: a bare number would be {value:g} bytes; give the unit, "
                                 f"e.g. {part.strip()}B, {part.strip()}KiB, {part.strip()}MiB or {part.strip()}GB")


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
        match = re.match(_SIZE_RE, str(text))
        if not match or (match.group("unit") == "b"):
            raise UnitParseError(f"invalid size {text!r}{unit_hint(text, SIZE_UNITS)}: expected {SIZE_HELP}")
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
        match = re.match(_RATE_RE, str(text))
        if not match:
            raise UnitParseError(f"invalid rate {text!r}{unit_hint(text, RATE_UNITS)}: expected {RATE_HELP}")
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
        match = re.match(_TIME_RE, str(text))
        if not match:
            raise UnitParseError(f"invalid time {text!r}{unit_hint(text, TIME_UNITS)}: expected {TIME_HELP}")
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
    """Format seconds with the largest unit that keeps the value ≥ 1: ``5e-6`` → ``'5 us'``, ``90`` →
    ``'1.5 min'``, ``4.7e6`` → ``'54.38 days'`` (min, h and days from 60 s, 1 h and 1 day up)."""
    magnitude = abs(seconds)
    if magnitude == 0:
        return "0 s"
    for unit, scale in (("days", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if magnitude >= scale:
            return f"{seconds / scale:.{digits}g} {unit}"
    return f"{seconds / 1e-9:.{digits}g} ns"
