"""distcalc: communication, memory and step-time overhead of distributed LLM training."""

from __future__ import annotations

__version__ = "0.1.0"
