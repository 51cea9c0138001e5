"""Step-time model: compute, TP/CP/EP/PP/DP communication on the cluster, pipeline bubble, optimizer,
MFU and HFU.

``analyze(spec, cluster, config)`` returns a :class:`StepReport` for one configuration;
``evaluate_batch(spec, cluster, batch)`` evaluates NumPy arrays of configurations with the same formulas
(:mod:`distcalc.analyze.core`).
"""

from __future__ import annotations

from distcalc.analyze.options import (AnalyzeOptions, AttentionKernel, ContextParallelAlgorithm, CrossEntropyKernel,
                                      ElementwiseKernels, FsdpSharding)
from distcalc.analyze.report import BREAKDOWN_KEYS, StepReport, analyze, config_batch, evaluate_batch

__all__ = ["AnalyzeOptions", "AttentionKernel", "BREAKDOWN_KEYS", "ContextParallelAlgorithm", "CrossEntropyKernel",
           "ElementwiseKernels", "FsdpSharding", "StepReport", "analyze", "config_batch",
           "evaluate_batch"]
