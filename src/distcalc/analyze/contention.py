"""Compute slowed by a collective running beside it: the default fraction.

While a collective runs, its NCCL kernels occupy SMs and HBM bandwidth, so the compute it overlaps runs
slower. Lee et al. 2025 ("Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep
Learning", arXiv:2507.03114) measured an average compute slowdown of 18.9 % (max 40 %) for GPT and Llama
layers overlapped with collectives on A100, H100, MI250 and MI210. :mod:`distcalc.analyze.fsdp` and
:mod:`distcalc.analyze.core` apply it to overlapped FSDP, DP and CP traffic; :mod:`distcalc.analyze.tp_async`
derives the hidden fraction of the asynchronous backward TP collectives from it. This module holds the default
alone (no NumPy), for the command line's option defaults.
"""

from __future__ import annotations

#: Average compute slowdown while a collective runs beside it (Lee et al. 2025, arXiv:2507.03114, abstract:
#: "an average computational slowdown of 18.9%, with a maximum of 40.0%", A100/H100/MI250/MI210).
OVERLAP_COMPUTE_SLOWDOWN = 0.189
