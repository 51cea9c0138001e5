"""``presets`` as a job: every shipped model, GPU and cluster preset with the numbers a picker needs."""

from __future__ import annotations

from typing import Any

from distcalc.cluster import list_clusters, load_cluster
from distcalc.collective import CollectiveKind
from distcalc.hardware import list_gpus, load_gpu
from distcalc.model import list_models, load_model
from distcalc.p2p import SEND_RECV
from distcalc.topology import TopologyKind


def presets_payload() -> dict[str, Any]:
    """The ``distcalc presets --json`` object: models (layers, heads, parameters), GPUs (memory, peak
    BF16), clusters (GPU, GPUs per node, links), collectives and topologies."""
    models = []
    for name in list_models():
        spec = load_model(name)
        models.append({"name": name, "parameters": spec.parameters,
                       "num_hidden_layers": spec.num_hidden_layers, "num_attention_heads": spec.num_attention_heads,
                       "hidden_size": spec.hidden_size, "moe": spec.is_moe})
    gpus = []
    for name in list_gpus():
        gpu = load_gpu(name)
        gpus.append({"name": name, "description": gpu.description, "memory_bytes": gpu.memory_bytes,
                     "peak_bf16_flops_per_s": gpu.peak_flops_per_s.get("bf16")})
    clusters = [{**load_cluster(name).describe(), "description": load_cluster(name).description}
                for name in list_clusters()]
    return {"models": models, "gpus": gpus, "clusters": clusters,
            "collectives": [k.value for k in CollectiveKind] + [SEND_RECV],
            "topologies": [k.value for k in TopologyKind]}
