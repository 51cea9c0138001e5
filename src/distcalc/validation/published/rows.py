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
    hidden: int | None
    layers: int | None
    heads: int | None
    kv_heads: int | None
    head_dim: int | None
    ffn: int | None
    vocab: int | None
    seq_len: int | None
    gated_mlp: bool
    tied_embeddings: bool
    pos_emb: str
    dropout: bool
    gpu: str
    gpus: int | None
    gpus_per_node: int | None
    cluster_network: str
    tp: int
    pp: int
    dp: int | None
    cp: int
    vpp: int | None
    micro_batch: int | None
    micro_batch_assumed: bool
    global_batch: int | None
    recompute: str
    recompute_detail: str
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


def parse_row(raw: dict[str, str]) -> PublishedRun:
    """One CSV row → :class:`PublishedRun` (numbers parsed, flags to bool/None). A column that is missing
    or empty becomes None (or ``""``); whether the row can still be described is the mapping's decision
    (:func:`distcalc.validation.published.mapping.run_inputs` names the columns it lacks)."""
    row = {key: (value or "").strip() for key, value in raw.items() if key is not None}
    text = lambda column: row.get(column, "")  # noqa: E731
    number = lambda column: _int(text(column))  # noqa: E731
    micro_batch = number("micro_batch")
    heads, hidden = number("heads"), number("hidden")
    return PublishedRun(
        case_id=text("case_id"), source=text("source"), model=text("model"),
        hidden=hidden, layers=number("layers"), heads=heads, kv_heads=number("kv_heads") or heads,
        head_dim=number("head_dim") or (hidden // heads if hidden and heads else None), ffn=number("ffn"),
        vocab=number("vocab"), seq_len=number("seq_len"), gated_mlp=bool(_bool(text("gated_mlp"))),
        tied_embeddings=bool(_bool(text("tied_embeddings"))), pos_emb=text("pos_emb"),
        dropout=bool(_bool(text("dropout"))), gpu=text("gpu"), gpus=number("gpus"),
        gpus_per_node=number("gpus_per_node"), cluster_network=text("cluster_network"),
        tp=number("tp") or 1, pp=number("pp") or 1, dp=number("dp"), cp=number("cp") or 1, vpp=number("vpp"),
        micro_batch=micro_batch if micro_batch is not None else number("assumed_micro_batch"),
        micro_batch_assumed=micro_batch is None, global_batch=number("global_batch"),
        recompute=text("recompute"), recompute_detail=text("recompute_detail"), flash_attention=_bool(text("flash_attention")),
        sequence_parallel=_bool(text("sequence_parallel")), zero_stage=number("zero_stage") or 0,
        fsdp=_bool(text("fsdp")), distributed_optimizer=_bool(text("distributed_optimizer")),
        dp_comm_overlap=_bool(text("dp_comm_overlap")), tp_comm_overlap=text("tp_comm_overlap"),
        precision=text("precision").lower(), framework=text("framework"),
        measured_step_time_s=_float(text("measured_step_time_s")), step_time_basis=text("step_time_basis"),
        measured_tflops_per_gpu=_float(text("measured_tflops_per_gpu")),
        model_flops_per_step=_float(text("model_flops_per_step")),
        measured_peak_memory_gib=_float(text("measured_peak_memory_gib")), memory_basis=text("memory_basis"),
        ep=number("ep") or 1, moe_detail=text("moe_detail"), assumptions=text("assumptions"),
        config_details=text("config_details"), notes=text("notes"),
    )


@lru_cache(maxsize=1)
def published_runs() -> tuple[PublishedRun, ...]:
    """Every row of the shipped development set, in file order."""
    path = resources.files("distcalc") / "data" / "validation" / "published_runs" / RUNS_FILE
    with path.open(encoding="utf-8", newline="") as handle:
        return tuple(parse_row(row) for row in csv.DictReader(handle))
