"""distcalc: communication, memory and step-time overhead of distributed LLM training."""

from __future__ import annotations

__version__ = "0.1.0"

from distcalc.collective import CollectiveKind, collective_latency_and_volume  # noqa: E402  (seed API, design §3)
