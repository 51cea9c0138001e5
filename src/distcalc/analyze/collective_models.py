"""The collective pricing models of the step-time model by ``--collective-model`` name, each in its own module,
imported when a run first asks for it (one room per variant).

``alpha-beta``, the default, is :mod:`distcalc.placement`'s α-β model on every group: nothing more to load.
``nccl`` is NCCL's own tuning model per group (:mod:`distcalc.analyze.nccl_pricing`), whose constants, graph
search and tuner (``collective/nccl_*``) a run that does not ask for it never imports. A model's module gives a
function that turns a cluster into one priced by the model: a :class:`~distcalc.cluster.ClusterSpec` whose
``collective_time_s(kind, sizes, placement)`` :func:`distcalc.analyze.comm.message_times` calls per group.
Adding a model is one module and one row of :data:`COLLECTIVE_MODELS`.
"""

from __future__ import annotations

import importlib

from distcalc.cluster import ClusterSpec

#: ``--collective-model`` name → (module, function returning the cluster priced by the model); None: the
#: α-β model, which every cluster has.
COLLECTIVE_MODELS: dict[str, tuple[str, str] | None] = {
    "alpha-beta": None,
    "nccl": ("distcalc.analyze.nccl_pricing", "with_nccl_model"),
}


def priced_cluster(model: str, cluster: ClusterSpec) -> ClusterSpec:
    """``cluster`` priced by collective model ``model`` (a key of :data:`COLLECTIVE_MODELS`), its module
    imported on first use."""
    entry = COLLECTIVE_MODELS[model]
    if entry is None:
        return cluster
    module, function = entry
    return getattr(importlib.import_module(module), function)(cluster)
