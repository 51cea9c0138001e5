"""Search every parallel configuration of a training job (``distcalc search``).

* :mod:`distcalc.search.space` — vectorized enumeration of the valid configurations, with rejection counts.
* :mod:`distcalc.search.engine` — memory pruning and step-time pricing through the memory and analyze
  models (no formula of its own), top-K, Pareto fronts, the fewest GPUs meeting a target.
* :mod:`distcalc.search.pareto` — Pareto fronts.
* :mod:`distcalc.search.counts` — GPU counts (``--gpus N``, ``a,b,c``, ``a..b``).
"""

from __future__ import annotations

from distcalc.search.counts import min_gpus_candidates, parse_gpu_counts
from distcalc.search.engine import CountResult, SearchResult, search, search_count
from distcalc.search.pareto import pareto_front
from distcalc.search.space import RejectReason, Space, SpaceChoices, SpaceLimits, enumerate_space, limits_for_model

__all__ = [
    "CountResult", "RejectReason", "SearchResult", "Space", "SpaceChoices", "SpaceLimits", "enumerate_space",
    "limits_for_model", "min_gpus_candidates", "pareto_front", "parse_gpu_counts", "search", "search_count",
]
