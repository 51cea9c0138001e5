"""Memory case sets: Korthikanti et al. 2022 Figures 1 and 7, ZeRO (Rajbhandari et al. 2020) Table 1.

All three are formula outputs published by their papers (analytic, not measurements); they check that
the memory model's normal code path reproduces the published formulas when given the papers' options:

* **korthikanti-fig1** — per-GPU "parameters + optimizer state" and "activations" of the 22B/175B/530B/1T
  runs of Table 3 (TP baseline, and SP + selective recompute), in GiB. Options: fp16 mixed precision with
  the 18-byte recipe, no flash attention, the models' dropout, the Table 3 degrees, batch and interleaving.
  Predicted = stage 0's transformer-layer lines of :func:`~distcalc.memory.memory_report`
  (``layer_model_states_bytes``, ``layer_activations_bytes``): the paper's bars count the transformer
  layers (12·L·h² parameters; Eq. 2 / Table 2 activations × the first stage's in-flight micro-batches,
  × (1 + (p−1)/(p·v)) when interleaved), not the embedding or the output layer, which the report shows on
  separate lines. Tolerance 0.5 %.
* **korthikanti-fig7** — activation memory per layer of each technique as a percentage of the TP baseline
  (``activations_per_layer_bytes`` ratio), tolerance 1 percentage point.
* **zero-table1** — model-state GB (1e9 B) per device for Ψ parameters, ZeRO P_os / P_os+g / P_os+g+p,
  N_d = 1…1024, with the ZeRO paper's recipe (2 + 2 + K, K = 12) through
  :func:`~distcalc.memory.states.model_state_bytes`. Tolerance 0.5 %, or, for values printed with
  decimals, half a unit of the last printed digit when that is larger (the table prints 0.12 for 0.1172
  and 0.47 for 0.46875).
"""

from __future__ import annotations

from distcalc.memory import MemoryOptions, Recipe, bytes_per_parameter, memory_report, model_state_bytes
from distcalc.model import load_model
from distcalc.units import GIB
from distcalc.parallel import ParallelConfig
from distcalc.validation.base import CaseSet, ValidationCase, printed_half_unit, read_validation_csv

KORTHIKANTI_SOURCE = "Korthikanti et al. 2022 (arXiv:2205.05198), values as encoded by calculon-ai/calculon@caa4b11"
# Table 3 model names -> presets
KORTHIKANTI_MODELS = {"22B": "megatron-22b", "175B (GPT-3)": "gpt3-175b", "530B (MT-NLG)": "megatron-530b",
                      "1T": "megatron-1t"}
# calculon technique modes -> (recompute, sequence_parallel)
TECHNIQUES = {"none": ("none", False), "seq": ("none", True), "sel": ("selective", False),
              "seqsel": ("selective", True), "full": ("full", False)}
ZERO_STAGES = {"P_os": 1, "P_os+g": 2, "P_os+g+p": 3}


def korthikanti_config(model: str, mode: str) -> ParallelConfig:
    """The Table 3 configuration of ``model`` with technique ``mode`` (none/seq/sel/seqsel/full)."""
    row = next(r for r in read_validation_csv("korthikanti2022_table3_configs.csv") if r["model"] == model)
    recompute, sequence_parallel = TECHNIQUES[mode]
    return ParallelConfig(
        gpus=int(row["num_gpus"]), tp=int(row["tensor_parallel"]), pp=int(row["pipeline_parallel"]),
        vpp=int(row["pipeline_interleave_stages"]), global_batch=int(row["global_batch_size_seqs"]),
        micro_batch=int(row["micro_batch_size_seqs"]), seq_len=int(row["seq_len"]), recompute=recompute,
        sequence_parallel=sequence_parallel, flash_attention=False, dtype="fp16",
    )


def _fig1_cases() -> list[ValidationCase]:
    cases = []
    for row in read_validation_csv("korthikanti2022_fig1_memory_gib_via_calculon.csv"):
        model, mode = row["model"], row["mode_calculon"]
        report = memory_report(load_model(KORTHIKANTI_MODELS[model]), korthikanti_config(model, mode),
                               options=MemoryOptions(recipe=Recipe.MIXED))
        stage = report.stages[0]
        for column, predicted, what in (
            ("params_plus_optimizer_GiB", stage.layer_model_states_bytes, "params+optimizer"),
            ("activations_GiB", stage.layer_activations_bytes, "activations"),
        ):
            cases.append(ValidationCase(
                case=f"{model} {mode} {what}", predicted=predicted / GIB, published=float(row[column]), unit="GiB",
                error_kind="relative", tolerance=0.005,
                note="stage 0, transformer layers; 18 B/param recipe" if what != "activations"
                else f"stage 0, transformer layers, {stage.in_flight_micro_batches:g} in-flight units",
            ))
    return cases


def _fig7_cases() -> list[ValidationCase]:
    cases = []
    baseline: dict[str, float] = {}
    for row in read_validation_csv("korthikanti2022_fig7_activation_pct_via_calculon.csv"):
        model, mode = row["model"], row["mode_calculon"]
        spec = load_model(KORTHIKANTI_MODELS[model])
        if model not in baseline:
            base = memory_report(spec, korthikanti_config(model, "none"))
            baseline[model] = base.stages[0].activations_per_layer_bytes
        per_layer = memory_report(spec, korthikanti_config(model, mode)).stages[0].activations_per_layer_bytes
        cases.append(ValidationCase(
            case=f"{model} {mode}", predicted=100.0 * per_layer / baseline[model],
            published=float(row["activation_memory_pct_of_tp_baseline"]), unit="%",
            error_kind="absolute", tolerance=1.0,
            note="activations per layer per micro-batch; error in percentage points",
        ))
    return cases


def _zero_cases() -> list[ValidationCase]:
    per_param = bytes_per_parameter(Recipe.MIXED_16BIT_GRADS)
    cases = []
    for row in read_validation_csv("zero2020_table1_model_state_memory_per_device.csv"):
        psi, dp, stage = float(row["params"]), int(row["dp_degree"]), ZERO_STAGES[row["zero_stage"]]
        weights, grads, optimizer = model_state_bytes(psi, per_param["weights"], per_param["gradients"],
                                                      per_param["optimizer"], stage, dp)
        printed = row["memory_GB_printed"]
        published = float(printed)
        # values printed with decimals are known only to half a unit of their last digit
        rounding = printed_half_unit(printed) / published if "." in printed else 0.0
        cases.append(ValidationCase(
            case=f"{row['model']} {row['zero_stage']} Nd={dp}", predicted=float(weights + grads + optimizer) / 1e9,
            published=published, unit="GB", error_kind="relative", tolerance=max(0.005, rounding),
            note="K=12, 2+2+12 B/param" + (f"; tolerance = printed rounding ±{printed_half_unit(printed):g}"
                                           if rounding > 0.005 else ""),
        ))
    return cases


CASE_SETS = (
    CaseSet("korthikanti-fig1", "Figure 1: params+optimizer and activation GiB per GPU (22B-1T, Table 3 configs)",
            KORTHIKANTI_SOURCE + " Figure 1", _fig1_cases),
    CaseSet("korthikanti-fig7", "Figure 7: activation memory per technique as % of the TP baseline",
            KORTHIKANTI_SOURCE + " Figure 7", _fig7_cases),
    CaseSet("zero-table1", "ZeRO Table 1: model-state GB per device for P_os, P_os+g, P_os+g+p",
            "Rajbhandari et al. 2020, ZeRO (arXiv:1910.02054) Table 1", _zero_cases),
)
