"""Step-time model: compute, TP/CP/EP/PP/DP communication on the cluster, pipeline bubble, optimizer,
MFU and HFU.

``analyze(spec, cluster, config)`` returns a :class:`StepReport` for one configuration;
``evaluate_batch(spec, cluster, batch)`` evaluates NumPy arrays of configurations with the same formulas
(:mod:`distcalc.analyze.core`).

The names below are loaded on first use (PEP 562 module ``__getattr__``): importing one light submodule
(``distcalc.analyze.fsdp`` for a default, say) does not import the whole cost model, which keeps
``distcalc analyze --help`` from paying for it.
"""

from __future__ import annotations

from typing import Any

_FROM_OPTIONS = ("AnalyzeOptions", "AttentionKernel", "ContextParallelAlgorithm", "CrossEntropyKernel",
                 "ElementwiseKernels", "FsdpSharding")
_FROM_REPORT = ("BREAKDOWN_KEYS", "StepReport", "analyze", "config_batch", "evaluate_batch")

__all__ = sorted(_FROM_OPTIONS + _FROM_REPORT)


def __getattr__(name: str) -> Any:
    if name in _FROM_OPTIONS:
        from distcalc.analyze import options as module
    elif name in _FROM_REPORT:
        from distcalc.analyze import report as module
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
