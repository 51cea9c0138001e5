"""Exceptions raised by distcalc's library calls.

Every user-facing mistake raises a subclass of :class:`DistcalcError` whose message names the bad value and
what would be valid. The CLI turns any ``DistcalcError`` into exit code 2 with that message on stderr.
"""

from __future__ import annotations


class DistcalcError(ValueError):
    """Base class of every error distcalc reports to a user (bad input, impossible configuration)."""


class UnitParseError(DistcalcError):
    """A size, rate or time string could not be parsed (e.g. ``1XB``, ``-1``)."""


class TopologyError(DistcalcError):
    """A topology cannot be built as asked (N < 1, a shape that does not multiply to N, ...)."""


class AlgorithmError(DistcalcError):
    """An algorithm name is unknown, or not valid for the collective on this topology."""


class ConfigError(DistcalcError):
    """A model, cluster or parallel configuration is invalid (degrees, divisibility, unknown preset)."""


class BenchError(DistcalcError):
    """A benchmark run failed (a rank died, hung or the backend is unavailable)."""
