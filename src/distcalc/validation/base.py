"""Validation cases: a prediction next to a published number, with its error and tolerance."""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from importlib import resources
from typing import Callable


@dataclass(frozen=True)
class ValidationCase:
    """One comparison. ``error`` is relative ((predicted − published)/published) when ``error_kind`` is
    ``relative``, or a difference in the published unit (e.g. percentage points) when ``absolute``;
    ``passed`` is ``|error| <= tolerance``."""

    case: str
    predicted: float
    published: float
    unit: str
    error_kind: str  # "relative" or "absolute"
    tolerance: float
    note: str = ""
    kind: str = "analytic"  # "analytic" (a published formula output) or "measured"
    group: str = ""  # the source a case belongs to, where a set spans several (summarised per group)
    other_tool: str = ""  # another tool whose published prediction of the same number is known
    other_tool_predicted: float | None = None

    @property
    def other_tool_error(self) -> float | None:
        """The other tool's relative error, where its prediction is known."""
        if self.other_tool_predicted is None or not self.published:
            return None
        return (self.other_tool_predicted - self.published) / self.published

    @property
    def error(self) -> float:
        """Signed error (relative, or absolute in ``unit``)."""
        diff = self.predicted - self.published
        if self.error_kind == "relative":
            return diff / self.published if self.published else float("inf") if diff else 0.0
        return diff

    @property
    def passed(self) -> bool:
        """``|error| <= tolerance``."""
        return abs(self.error) <= self.tolerance

    def to_dict(self) -> dict[str, object]:
        """JSON form; ``measured`` repeats ``published`` under the name design.md uses."""
        out = {"case": self.case, "predicted": self.predicted, "published": self.published,
               "measured": self.published, "unit": self.unit, "error": self.error,
               "error_kind": self.error_kind, "tolerance": self.tolerance, "passed": self.passed,
               "kind": self.kind, "note": self.note}
        if self.group:
            out["group"] = self.group
        if self.other_tool and self.other_tool_predicted is not None:
            out["other_tool"] = {"name": self.other_tool, "predicted": self.other_tool_predicted,
                                 "error": self.other_tool_error}
        return out


@dataclass(frozen=True)
class SkippedCase:
    """A published number the model cannot express, listed with the reason (never dropped silently)."""

    case: str
    group: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """JSON form."""
        return {"case": self.case, "group": self.group, "reason": self.reason}


@dataclass(frozen=True)
class OpenGap:
    """A source whose cases stay outside their target, with what is known about why (``known``)."""

    group: str
    quantity: str
    mean_abs_error: float
    signed_mean_error: float
    known: str

    def to_dict(self) -> dict[str, object]:
        """JSON form."""
        return {"group": self.group, "quantity": self.quantity, "mean_abs_error": self.mean_abs_error,
                "signed_mean_error": self.signed_mean_error, "known": self.known}


@dataclass(frozen=True)
class CaseSet:
    """A named group of cases from one published source; ``run()`` computes them."""

    name: str
    description: str
    source: str
    run: Callable[[], list[ValidationCase]] = field(repr=False)
    skipped: Callable[[], list[SkippedCase]] | None = field(default=None, repr=False)
    open_gaps: Callable[[], list[OpenGap]] | None = field(default=None, repr=False)

    def __call__(self) -> list[ValidationCase]:
        """Compute the cases (same as :meth:`run`)."""
        return self.run()


def read_validation_csv(filename: str) -> list[dict[str, str]]:
    """Rows of a validation CSV shipped in ``distcalc/data/validation``."""
    path = resources.files("distcalc") / "data" / "validation" / filename
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def printed_half_unit(text: str) -> float:
    """Half a unit in the last printed digit of a number as printed (``"0.12"`` → 0.005, ``"4187"`` → 0.5):
    the rounding uncertainty of a published value."""
    text = text.strip()
    decimals = len(text.split(".", 1)[1]) if "." in text else 0
    return 0.5 * 10.0 ** (-decimals)
