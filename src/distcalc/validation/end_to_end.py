"""End-to-end step-time case sets: measured Megatron-LM runs of Korthikanti et al. 2022 on Selene.

One cluster preset (``dgx-a100``: A100-80GB, NVLink 3, 8× HDR per node) and one set of options describe
all runs; nothing is tuned per row. The options state how the 2022 Megatron-LM software behaved:
gradients all-reduced after the backward pass (no overlap; ``megatron/training.py`` ``train_step``), fp16
mixed precision (the memory cases' configuration, :func:`distcalc.validation.memory_cases.korthikanti_config`),
no FlashAttention (it did not exist yet), dropout 0.1 (model presets), and Megatron-LM's own linear layers
(TransformerEngine came to Megatron-LM in 2023): the column-parallel QKV adds its bias in a kernel of its own
(``output = output + bias``) and every biased linear reduces its bias gradient in one (``grad_output.sum``;
``megatron/mpu/layers.py`` of 2022, ``core/tensor_parallel/layers.py`` at 285068c8) — ``elementwise_kernels``
megatron-local, as for the other Megatron-LM stacks of that time (:mod:`distcalc.validation.published.mapping`).

* **korthikanti-table5** — iteration time of the 8 runs of Table 5 (tolerance 6 % each), the mean
  absolute error over them (≤ 3 %), and MFU of the four present-work rows (± 2 points).
* **korthikanti-table4** — forward and backward time of one 22B layer (TP 8, micro-batch 4) for the five
  techniques of Table 4 (tolerance 10 %).
* **korthikanti-heldout** — the 530B run at DP = 8 on 2240 GPUs (Sec. 6.3: 39.15 s, 54.2 % MFU), a
  measurement the model was never compared against while it was built (tolerance 6 % / 3 points); the same
  run with full recompute (abstract: 42.1 % MFU) and the per-layer recompute overheads of Fig. 8 (36 % full,
  2 % selective), added later.

Per term (22B layer of Table 4, fp16, TP 8, micro-batch 4): the forward (GEMMs 3.68 ms, unfused attention
1.26, elementwise 0.81, QKV bias add 0.05, × 1.021 for the slowest of 8 GPUs, + 1.92 ms of two TP AllReduces)
is within 2 % of the measured 7.7 ms in every technique; the backward (GEMMs 7.50 ms, attention 1.83,
elementwise 0.97, bias-gradient reductions 0.21, + 1.92 ms of TP collectives) was 5–7.5 % (0.75–1.0 ms) over
with those collectives priced fully exposed. The 2022 code launches them asynchronously beside a GEMM of the
same layer (no SP: the AllReduce of the column-parallel input gradient beside its weight-gradient GEMM; SP:
the input re-gather beside the input-gradient GEMM and the ReduceScatter beside the weight gradient —
Megatron-LM ``LinearWithGradAccumulationAndAsyncCommunication``, sequence_parallel merge 9aad9203aa of
2022-05-20; the AllReduce overlap since cf7efd4f5a, 2021-08-30): ``tp_async_backward`` hides 39 % of them
(:mod:`distcalc.analyze.tp_async`, from Lee et al. 2025's averages, not from these rows), which puts every
Table 4 backward within 1.3 % and Table 5 at 1.39 % mean (max 2.88 %; before: 2.07 / 4.04 %). Fully hidden
the backward would be 5–10 % under. The one published sustained A100 GEMM rate (257 TFLOP/s at 400 W,
REFERENCES.md) as a power cap is still refused by the 530B and 1T rows, whose GEMMs run at the cap
(:data:`distcalc.validation.published.gaps.A100_GEMM_RATE`).
"""

from __future__ import annotations

import numpy as np

from distcalc.analyze import AnalyzeOptions, analyze
from distcalc.analyze.options import ElementwiseKernels
from distcalc.analyze.core import evaluate
from distcalc.analyze.report import _device, _dims, config_batch
from distcalc.cluster import load_cluster
from distcalc.model import load_model
from distcalc.parallel import ParallelConfig
from distcalc.validation.base import CaseSet, ValidationCase, read_validation_csv
from distcalc.validation.memory_cases import KORTHIKANTI_MODELS, korthikanti_config

SOURCE = "Korthikanti et al. 2022 (arXiv:2205.05198)"
CLUSTER = "dgx-a100"
#: 2022 Megatron-LM: DP gradients reduced after the backward pass, parameters not gathered (no dist-opt), local
#: linears with their unfused bias kernels.
KORTHIKANTI_OPTIONS = AnalyzeOptions(overlap_grad_reduce=False, overlap_param_gather=False,
                                     elementwise_kernels=ElementwiseKernels.MEGATRON_LOCAL, tp_async_backward=True)


def _mode(technique: str) -> str:
    return "full" if technique.startswith("full") else "seqsel"


def table5_results(options: AnalyzeOptions = KORTHIKANTI_OPTIONS) -> list[dict[str, object]]:
    """Predicted vs measured iteration time (and MFU/HFU) of every Table 5 row (``options``: the 2022
    Megatron-LM behaviour; other options show what a term contributes)."""
    rows = []
    for row in read_validation_csv("korthikanti2022_table5_end_to_end.csv"):
        config = korthikanti_config(row["model"], _mode(row["technique"]))
        report = analyze(KORTHIKANTI_MODELS[row["model"]], CLUSTER, config, options)
        rows.append({"model": row["model"], "technique": row["technique"], "mode": _mode(row["technique"]),
                     "predicted_s": report.step_time_s, "measured_s": float(row["iteration_time_s"]),
                     "mfu": report.mfu, "hfu": report.hfu,
                     "measured_mfu_pct": float(row["mfu_pct"]) if row["mfu_pct"] else None,
                     "measured_hfu_pct": float(row["hfu_pct"]) if row["hfu_pct"] else None})
    return rows


def _table5_cases() -> list[ValidationCase]:
    rows = table5_results()
    cases = [ValidationCase(case=f"{r['model']} {r['mode']} iteration time", predicted=r["predicted_s"],
                            published=r["measured_s"], unit="s", error_kind="relative", tolerance=0.06,
                            kind="measured", note=str(r["technique"])) for r in rows]
    errors = [abs(r["predicted_s"] - r["measured_s"]) / r["measured_s"] for r in rows]
    cases.append(ValidationCase(case="mean |error| of the 8 iteration times", predicted=100 * float(np.mean(errors)),
                                published=0.0, unit="%", error_kind="absolute", tolerance=3.0, kind="measured",
                                note=f"worst {100 * max(errors):.2f} %"))
    for r in rows:
        if r["measured_mfu_pct"] is not None:
            cases.append(ValidationCase(case=f"{r['model']} {r['mode']} MFU", predicted=100 * r["mfu"],
                                        published=r["measured_mfu_pct"], unit="%", error_kind="absolute",
                                        tolerance=2.0, kind="measured", note="72BLsh^2(1+s/6h+V/12hL), 312 TFLOP/s"))
    return cases


def table4_results(options: AnalyzeOptions = KORTHIKANTI_OPTIONS) -> list[dict[str, object]]:
    """Predicted vs measured forward/backward ms of one 22B layer for the techniques of Table 4 (``options``:
    the 2022 Megatron-LM behaviour; other options show what a term contributes)."""
    spec = load_model(KORTHIKANTI_MODELS["22B"])
    cluster = load_cluster(CLUSTER)
    out = []
    for row in read_validation_csv("korthikanti2022_table4_layer_time.csv"):
        base = korthikanti_config("22B", "none").model_dump()
        config = ParallelConfig(**{**base, "recompute": row["recompute"],
                                   "sequence_parallel": row["sequence_parallel"] == "True"})
        result = evaluate(_dims(spec), _device(cluster.gpu, config.dtype.value), cluster, config_batch(config),
                          options)
        out.append({"experiment": row["experiment"],
                    "forward_ms": 1e3 * float(np.ravel(result["layer_forward_s"])[0]),
                    "backward_ms": 1e3 * float(np.ravel(result["layer_backward_s"])[0]),
                    "measured_forward_ms": float(row["forward_ms"]), "measured_backward_ms": float(row["backward_ms"])})
    return out


def _table4_cases() -> list[ValidationCase]:
    cases = []
    for r in table4_results():
        for part in ("forward", "backward"):
            cases.append(ValidationCase(case=f"22B layer {r['experiment']} {part}", predicted=r[f"{part}_ms"],
                                        published=r[f"measured_{part}_ms"], unit="ms", error_kind="relative",
                                        tolerance=0.10, kind="measured", note="TP 8, micro-batch 4, s 2048"))
    return cases


def heldout_config(mode: str = "seqsel") -> ParallelConfig:
    """530B at DP = 8 (2240 GPUs, batch 8 × 280), Sec. 6.3; ``mode`` "seqsel" (SP + selective recompute)
    or "full" (full recompute, no SP)."""
    base = korthikanti_config("530B (MT-NLG)", mode)
    return ParallelConfig(**{**base.model_dump(), "gpus": 2240, "dp": None, "global_batch": 2240})


def layer_recompute_overhead(model: str, recompute: str, sequence_parallel: bool) -> float:
    """(forward + backward time of one layer with ``recompute``) / (the same without recompute) − 1, both with
    or both without sequence parallelism, in the model's Table 3 configuration (Korthikanti Fig. 8's
    "overhead" of recomputation)."""
    spec = load_model(KORTHIKANTI_MODELS[model])
    cluster = load_cluster(CLUSTER)
    base = korthikanti_config(model, "seqsel").model_dump()
    times = []
    for mode in (recompute, "none"):
        config = ParallelConfig(**{**base, "recompute": mode, "sequence_parallel": sequence_parallel})
        out = evaluate(_dims(spec), _device(cluster.gpu, config.dtype.value), cluster, config_batch(config),
                       KORTHIKANTI_OPTIONS)
        times.append(float(np.ravel(out["layer_forward_s"])[0] + np.ravel(out["layer_backward_s"])[0]))
    return times[0] / times[1] - 1.0


def _heldout_cases() -> list[ValidationCase]:
    """Measurements of Korthikanti et al. 2022 beyond Tables 4 and 5. The two DP = 8 seqsel numbers were held
    out while the model was built; the full-recompute MFU at DP = 8 and the Fig. 8 recompute overheads were
    added afterwards (computed once, reported as they came out)."""
    rows = {(r["technique"], r["metric"], r["data_parallel"]): float(r["value"])
            for r in read_validation_csv("korthikanti2022_other_measurements.csv")}
    seqsel, full = "sequence parallel + selective recompute", "full recompute"
    model = KORTHIKANTI_MODELS["530B (MT-NLG)"]
    report = analyze(model, CLUSTER, heldout_config(), KORTHIKANTI_OPTIONS)
    report_full = analyze(model, CLUSTER, heldout_config("full"), KORTHIKANTI_OPTIONS)
    return [
        ValidationCase(case="530B DP=8 (2240 GPUs) iteration time", predicted=report.step_time_s,
                       published=rows[(seqsel, "iteration_time_s", "8")], unit="s", error_kind="relative",
                       tolerance=0.06, kind="measured",
                       note="held out; DP gradient all-reduce over 8 nodes on the HDR rails"),
        ValidationCase(case="530B DP=8 (2240 GPUs) MFU", predicted=100 * report.mfu,
                       published=rows[(seqsel, "mfu_pct", "8")], unit="%", error_kind="absolute", tolerance=3.0,
                       kind="measured", note="held out"),
        ValidationCase(case="530B DP=8 (2240 GPUs) full recompute MFU", predicted=100 * report_full.mfu,
                       published=rows[(full, "mfu_pct", "8")], unit="%", error_kind="absolute", tolerance=3.0,
                       kind="measured", note="abstract: 42.1 %"),
        ValidationCase(case="530B layer overhead of full recompute", predicted=100 * layer_recompute_overhead(
                           "530B (MT-NLG)", "full", False), published=rows[(full, "recompute_overhead_pct", "1")],
                       unit="%", error_kind="absolute", tolerance=5.0, kind="measured",
                       note="Fig. 8 / Sec. 6.2 (published as a round number)"),
        ValidationCase(case="530B layer overhead of selective recompute (SP)", predicted=100 * layer_recompute_overhead(
                           "530B (MT-NLG)", "selective", True), published=rows[(seqsel, "recompute_overhead_pct", "1")],
                       unit="%", error_kind="absolute", tolerance=1.0, kind="measured",
                       note="Fig. 8 / Sec. 6.2 (published as a round number)"),
    ]


CASE_SETS = (
    CaseSet("korthikanti-table5", "Megatron-LM iteration time and MFU of the 22B/175B/530B/1T runs (Table 5)",
            SOURCE + " Table 5", _table5_cases),
    CaseSet("korthikanti-table4", "forward/backward time of one 22B transformer layer (Table 4)",
            SOURCE + " Table 4", _table4_cases),
    CaseSet("korthikanti-heldout", "530B at data parallelism 8 on 2240 GPUs (Sec. 6.3) and recompute overheads",
            SOURCE + " Sec. 6.2, 6.3, abstract", _heldout_cases),
)
