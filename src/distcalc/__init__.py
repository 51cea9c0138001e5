"""distcalc: communication, memory and step-time overhead of distributed LLM training."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# The seed API (docs/design.md §3), loaded on first use so that `import distcalc` (and the CLI's start-up)
# does not import the collective cost models (PEP 562 module __getattr__).
_SEED_API = {"CollectiveKind": "distcalc.collective", "collective_latency_and_volume": "distcalc.collective"}
__all__ = ["CollectiveKind", "collective_latency_and_volume", "__version__"]


def __getattr__(name: str) -> Any:
    if name in _SEED_API:
        import importlib

        return getattr(importlib.import_module(_SEED_API[name]), name)
    raise AttributeError(f"module 'distcalc' has no attribute {name!r}")
