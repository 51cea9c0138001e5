"""The published measured training runs as typed records (``data/validation/published_runs``).

One :class:`PublishedRun` per row of ``dev_measured_runs.csv``; the CSV's README (shipped beside it) explains
every column. Parsing turns the CSV's words into Python values and nothing more: what a value *means* for
distcalc (which preset, which option) is decided in :mod:`distcalc.validation.published.mapping`.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

RUNS_FILE = "dev_measured_runs.csv"


def _bool(text: str) -> bool | None:
    """``true``/``false`` → bool; anything else (``n/a``, ``unknown``, empty) → None (not stated)."""
    return {"true": True, "false": False}.get(text.strip().lower())


def _int(text: str) -> int | None:
    text = text.strip()
    return int(text) if text.isdigit() else None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class PublishedRun:
    """One measured training run (units: seconds, GiB, sequences, tokens). ``None`` = not stated."""

    case_id: str
    source: str
    model: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    seq_len: int
    gated_mlp: bool
    tied_embeddings: bool
    pos_emb: str
    dropout: bool
    gpu: str
    gpus: int
    gpus_per_node: int
    cluster_network: str
    tp: int
    pp: int
    dp: int
    cp: int
    vpp: int | None
    micro_batch: int | None
    micro_batch_assumed: bool
    global_batch: int
    recompute: str
    flash_attention: bool | None
    sequence_parallel: bool | None
    zero_stage: int
    fsdp: bool | None
    distributed_optimizer: bool | None
    dp_comm_overlap: bool | None
    tp_comm_overlap: str
    precision: str
    framework: str
    measured_step_time_s: float | None
    step_time_basis: str
    measured_tflops_per_gpu: float | None
    model_flops_per_step: float | None
    measured_peak_memory_gib: float | None
    memory_basis: str
    ep: int
    moe_detail: str
    assumptions: str
    config_details: str
    notes: str

    @property
    def precision_label(self) -> str:
        """The source's own precision label where it printed one (``FP8-CS``, ``FP8-MX``…), else ``precision``."""
        match = re.search(r"precision label:\s*([A-Za-z0-9-]+)", self.notes)
        return match.group(1) if match else self.precision

    @property
    def schedule_label(self) -> str:
        """The pipeline schedule the source names (``ZB-2p``, ``1F1B-I``…), or ``""``."""
        match = re.search(r"schedule\s+([A-Za-z0-9-]+):", self.config_details)
        return match.group(1) if match else ""

    @property
    def other_tool_prediction(self) -> tuple[str, float, float | None] | None:
        """Another tool's published prediction kept in ``notes``: (tool, step time s, peak memory GiB)."""
        match = re.search(r"(\w+) perf prediction ([0-9.]+) ms(?: / ([0-9.]+) GiB)?", self.notes)
        if not match:
            return None
        memory = float(match.group(3)) if match.group(3) else None
        return match.group(1), float(match.group(2)) / 1e3, memory


def parse_row(row: dict[str, str]) -> PublishedRun:
    """One CSV row → :class:`PublishedRun` (numbers parsed, flags to bool/None)."""
    micro_batch = _int(row["micro_batch"])
    return PublishedRun(
        case_id=row["case_id"], source=row["source"], model=row["model"],
        hidden=int(row["hidden"]), layers=int(row["layers"]), heads=int(row["heads"]),
        kv_heads=int(row["kv_heads"]), head_dim=int(row["head_dim"]), ffn=int(row["ffn"]),
        vocab=int(row["vocab"]), seq_len=int(row["seq_len"]), gated_mlp=bool(_bool(row["gated_mlp"])),
        tied_embeddings=bool(_bool(row["tied_embeddings"])), pos_emb=row["pos_emb"].strip(),
        dropout=bool(_bool(row["dropout"])), gpu=row["gpu"].strip(), gpus=int(row["gpus"]),
        gpus_per_node=int(row["gpus_per_node"]), cluster_network=row["cluster_network"],
        tp=int(row["tp"]), pp=int(row["pp"]), dp=int(row["dp"]), cp=_int(row["cp"]) or 1, vpp=_int(row["vpp"]),
        micro_batch=micro_batch if micro_batch is not None else _int(row["assumed_micro_batch"]),
        micro_batch_assumed=micro_batch is None, global_batch=int(row["global_batch"]),
        recompute=row["recompute"].strip(), flash_attention=_bool(row["flash_attention"]),
        sequence_parallel=_bool(row["sequence_parallel"]), zero_stage=_int(row["zero_stage"]) or 0,
        fsdp=_bool(row["fsdp"]), distributed_optimizer=_bool(row["distributed_optimizer"]),
        dp_comm_overlap=_bool(row["dp_comm_overlap"]), tp_comm_overlap=row["tp_comm_overlap"].strip(),
        precision=row["precision"].strip().lower(), framework=row["framework"],
        measured_step_time_s=_float(row["measured_step_time_s"]), step_time_basis=row["step_time_basis"],
        measured_tflops_per_gpu=_float(row["measured_tflops_per_gpu"]),
        model_flops_per_step=_float(row["model_flops_per_step"]),
        measured_peak_memory_gib=_float(row["measured_peak_memory_gib"]), memory_basis=row["memory_basis"],
        ep=_int(row["ep"]) or 1, moe_detail=row["moe_detail"], assumptions=row["assumptions"],
        config_details=row["config_details"], notes=row["notes"],
    )


@lru_cache(maxsize=1)
def published_runs() -> tuple[PublishedRun, ...]:
    """Every row of the shipped development set, in file order."""
    path = resources.files("distcalc") / "data" / "validation" / "published_runs" / RUNS_FILE
    with path.open(encoding="utf-8", newline="") as handle:
        return tuple(parse_row(row) for row in csv.DictReader(handle))
