"""What the shipped presets hold, as rows of key numbers with their sources (``distcalc presets``)."""

from __future__ import annotations

from enum import Enum
from typing import Any

from distcalc.cluster import list_clusters, list_links, load_cluster, load_link
from distcalc.hardware import list_gpus, load_gpu
from distcalc.model import list_models, load_model
from distcalc.preset_files import read_presets
from distcalc.units import format_rate, format_size, format_time


class PresetKind(str, Enum):
    """The preset families ``distcalc presets`` lists."""

    MODELS = "models"
    GPUS = "gpus"
    CLUSTERS = "clusters"
    LINKS = "links"


def _model_rows() -> list[dict[str, Any]]:
    rows = []
    for name in list_models():
        spec = load_model(name)
        experts = f"{spec.num_local_experts} experts, top-{spec.num_experts_per_tok}" if spec.is_moe else "dense"
        rows.append({"name": name, "parameters": spec.parameters, "num_hidden_layers": spec.num_hidden_layers,
                     "num_attention_heads": spec.num_attention_heads, "hidden_size": spec.hidden_size,
                     "moe": spec.is_moe,
                     "key numbers": f"{spec.parameters / 1e9:.1f}B params, {spec.num_hidden_layers} layers, "
                                    f"hidden {spec.hidden_size}, {spec.num_attention_heads} heads "
                                    f"({spec.kv_heads} KV), {experts}",
                     "source": spec.source})
    return rows


def _gpu_rows() -> list[dict[str, Any]]:
    rows = []
    for name in list_gpus():
        gpu = load_gpu(name)
        bf16 = gpu.peak_flops_per_s.get("bf16")
        peak = f", {bf16 / 1e12:.0f} TFLOP/s dense BF16" if bf16 else ""
        link = read_presets("gpus.yaml")[name].get("intra_link")
        rows.append({"name": name, "description": gpu.description, "memory_bytes": gpu.memory_bytes,
                     "peak_bf16_flops_per_s": bf16,
                     "key numbers": f"{format_size(gpu.memory_bytes)} HBM at {format_rate(gpu.hbm_bandwidth_bytes_per_s)}"
                                    f"{peak}" + (f", in-node link {link}" if link else ""),
                     "source": gpu.source})
    return rows


def _cluster_rows() -> list[dict[str, Any]]:
    rows = []
    for name in list_clusters():
        c = load_cluster(name)
        inter = (f"{c.nics_per_node}× {c.inter.name} per node ({format_rate(c.inter_bandwidth_per_gpu_bytes_per_s)}/GPU)"
                 if c.inter is not None and c.nics_per_node else "no inter-node network")
        rows.append({**c.describe(), "description": c.description,
                     "key numbers": f"{c.gpus_per_node}× {c.gpu} per node; in node {c.intra.name} "
                                    f"({format_rate(c.intra.bandwidth_bytes_per_s)}/dir); {inter}",
                     "source": c.source})
    return rows


def _link_rows() -> list[dict[str, Any]]:
    rows = []
    for name in list_links():
        link = load_link(name)
        rows.append({"name": name, "bandwidth_bytes_per_s": link.bandwidth_bytes_per_s,
                     "key numbers": f"{format_rate(link.bandwidth_bytes_per_s)} per direction, α "
                                    f"{format_time(link.latency_s)}, η {link.efficiency:g}",
                     "source": link.source})
    return rows


_ROWS = {PresetKind.MODELS: _model_rows, PresetKind.GPUS: _gpu_rows, PresetKind.CLUSTERS: _cluster_rows,
         PresetKind.LINKS: _link_rows}


def preset_rows(kind: PresetKind) -> list[dict[str, Any]]:
    """One row per preset of ``kind``: ``name``, ``key numbers`` (text), ``source`` and the raw numbers."""
    return _ROWS[PresetKind(kind)]()
