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
        return {"case": self.case, "predicted": self.predicted, "published": self.published,
                "measured": self.published, "unit": self.unit, "error": self.error,
                "error_kind": self.error_kind, "tolerance": self.tolerance, "passed": self.passed,
                "kind": self.kind, "note": self.note}


@dataclass(frozen=True)
class CaseSet:
    """A named group of cases from one published source; ``run()`` computes them."""

    name: str
    description: str
    source: str
    run: Callable[[], list[ValidationCase]] = field(repr=False)

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
