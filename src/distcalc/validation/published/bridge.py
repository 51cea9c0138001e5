"""Megatron-Bridge's performance recipes (the ``MegatronBridge_perf_summary_25.09`` / ``_25.11`` rows): what the
published-runs mapping takes from the recipe each row ran, and what stays off.

Priced (rules of :mod:`distcalc.validation.published.mapping`):

* **Gradients in bf16.** The recipes reduce gradients in the parameter dtype (:data:`BRIDGE_GRADIENT_BYTES`):
  25.09 (branch ``r0.1.0``, ``scripts/performance/configs/{llama3,llama31}/*_llm_pretrain.yaml``) sets
  ``mixed_precision.grad_reduce_in_fp32: false``; 25.11 (branch ``r0.2.0``,
  ``scripts/performance/configs/{llama3,llama31}/llama3*_llm_pretrain.py``) sets
  ``cfg.mixed_precision.grad_reduce_in_fp32 = False`` and ``cfg.ddp.grad_reduce_in_fp32 = False``. Megatron-Core's
  DDP then allocates its gradient buffer in the parameter dtype (``grad_dtype = torch.float if
  grad_reduce_in_fp32 else param.dtype``, ``distributed_data_parallel.py``), and Megatron-FSDP reduces in the
  training dtype unless the same flag is set (Megatron-Core ``core_v0.14.0``,
  ``distributed/fsdp/src/README.md``: "``grad_reduce_in_fp32`` will reduce gradients in ``FP32`` precision (in
  contrast to the lower ``BF16`` …)"): the buffer zeroed each step, the DP/FSDP reduce-scatter and the model
  states' gradients are 2 B per element.
* **TransformerEngine's fused cross-entropy.** The performance scripts of both releases set
  ``cross_entropy_fusion_impl: "te"`` (25.09: the ``*_llm_pretrain.yaml`` files; 25.11: ``set_common_perf_overrides``
  in ``scripts/performance/utils/helpers.py``) with the loss fusion on by default: the loss streams each logit
  as TE's Triton kernels do (:func:`distcalc.validation.published.stack_kernels.cross_entropy_kernel`).
* **Uneven pipeline split.** Llama 3.1 405B (126 layers) runs with ``account_for_embedding_in_pipeline_split``
  and ``account_for_loss_in_pipeline_split`` true (the recipe's defaults, ``recipes/llama/llama31_405b.py``):
  128 slots over PP 8 × VPP 8 = 64 chunks, two per chunk, the first chunk holding the embedding and one layer,
  the last one layer and the loss (the mapping's generic rule: ``layers + 2`` divisible by ``pp × vpp``).

What stays off, and why (``mbridge_25.09_gb200_llama3p1_405b_128g_fp8mx_alt``, predicted −24 %): the 25.09 recipe
ran *exactly* the B200 row's configuration on GB200 (``llama31_405b_llm_pretrain.yaml`` perf matrix:
``gb200.num_gpus_128.fp8_mx`` = TP 4, PP 8, CP 2, VP 8, no Megatron-FSDP, MBS 1, GBS 64, no CUDA graphs, the same
userbuffers configuration ``userbuffers_fp8_b200_h16384_tp4_cp2_mbs1_seqlen8192`` in ``utils/helpers.py``, CP by
ring exchange as Megatron's default ``cp_comm_type``), yet the GB200 run printed 578 tokens/s/GPU against the B200's
622 — 7.6 % slower on a part that is faster on the release's other rows both systems ran (Llama 3 8B: GB200 4.2 /
4.4 s against B200 4.4 / 4.5 s). The job's placement makes the GB200 run's communication *cheaper* than the B200's:
``utils/executors.py`` runs 4 tasks per GB200 tray and, beyond one rack, ``sbatch --segment 16`` (32 trays → 2 ×
16), so each 64-GPU NVLink domain holds pipeline stages 0–3 or 4–7 whole (Megatron-Core's default rank order
``tp-cp-ep-dp-pp``: TP, CP and DP inside one domain, 2 of the 8 pipeline hops on InfiniBand), where the B200 run
crosses InfiniBand on every pipeline hop and on DP. Pricing that placement moves the row by less than 0.1 point.
What the GB200 job differs in otherwise — ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``
(``setup_experiment.py``, set for this model on GB200 only), the Grace host, ``NCCL_NET_GDR_C2C`` — has no published
cost, so nothing is priced for it. About a third of the gap is the GB200 compute preset (its power-limited rate is
B200's × 1200/1000 W, an assumption): the published MAMF ratio instead (GB200 1822.0 / B200 1745.0 TFLOPS,
ml-engineering's table) leaves this row at −17 % and moves the other GB200 rows +9…+13 points (the 25.11 70B and
405B rows to +14 %), so the row keeps about 17 points that no published mechanism explains and the preset is left
as it is.
"""

from __future__ import annotations

from distcalc.memory import Recipe
from distcalc.validation.published.rows import PublishedRun

#: Bytes per gradient element of Megatron-Bridge's performance recipes (module docstring: ``grad_reduce_in_fp32``
#: false in the 25.09 and 25.11 releases' perf configs; Megatron-Core's buffer is then bf16).
BRIDGE_GRADIENT_BYTES = 2


def bridge_bf16_gradients(run: PublishedRun) -> bool:
    """Whether the row ran a Megatron-Bridge performance recipe, whose gradients are bf16
    (:data:`BRIDGE_GRADIENT_BYTES`)."""
    return "Megatron-Bridge" in run.framework


def bridge_analyze_updates(run: PublishedRun) -> dict[str, float]:
    """AnalyzeOptions fields a Megatron-Bridge row changes: its bf16 gradient buffer is reduced and zeroed at
    :data:`BRIDGE_GRADIENT_BYTES` per element (empty for other rows)."""
    if not bridge_bf16_gradients(run):
        return {}
    return {"grad_reduce_bytes": BRIDGE_GRADIENT_BYTES,
            "grad_buffer_zero_bytes_per_parameter": float(BRIDGE_GRADIENT_BYTES)}


def bridge_memory_updates(run: PublishedRun) -> dict[str, Recipe]:
    """MemoryOptions fields a Megatron-Bridge row changes: 16-bit gradients in the model states (2 + 2 + 12 B per
    parameter before sharding; empty for other rows)."""
    return {"recipe": Recipe.MIXED_16BIT_GRADS} if bridge_bf16_gradients(run) else {}
