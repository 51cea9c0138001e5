"""Megatron-DeepSpeed as BigScience ran it (the BLOOM sweep of 2022-02-21 on Jean Zay): which of its kernels and
passes the published-runs mapping prices, from the code of that date, and what stays off.

Priced (rules of :mod:`distcalc.validation.published.mapping`):

* **Optimizer.** DeepSpeed's ZeRO-1 optimizer (``deepspeed/runtime/zero/stage_1_and_2.py``) keeps the 16-bit
  ``param.grad`` and reduces it through a 16-bit bucket (``grad_reduce_bytes`` 2, recipe ``mixed-16bit-grads``);
  its step's own tensors are in :mod:`distcalc.memory.stacks`. Megatron-DeepSpeed in bf16 with ZeRO 0 runs
  DeepSpeed's ``BF16_Optimizer`` instead (BLOOM's main training, tr11-176B-ml.slurm: "bf16 must use z0! it
  implements its own zero stage 1 equivalent"): all-reduced fp32 gradients and an 18 B/parameter accumulation
  pass per micro-batch (:data:`BF16_OPTIMIZER_ACCUMULATION_BYTES`).
* **Gradient accumulation by autograd.** Megatron-DeepSpeed's linears (``megatron/mpu/layers.py`` at the
  2022-02-21 commit ae6277f: ``F.linear``, no ``gradient_accumulation_fusion``) leave the sum over micro-batches
  to PyTorch's ``AccumulateGrad``, one memory-bound pass over the stage's 16-bit gradients per micro-batch
  (:data:`AUTOGRAD_ACCUMULATION_BYTES`); Megatron-LM folds it into the weight-gradient GEMM (``main_grad``).
* **Kernels.** The same linears add the QKV bias and reduce every bias gradient in kernels of their own
  (``elementwise_kernels`` megatron-local, as Megatron-LM's local linears); attention is the unfused
  Megatron path with the fused scale-mask-softmax (its constraints hold for 64 heads: ``fused_softmax.py``
  ``is_kernel_available``), ALiBi through ``baddbmm``'s C operand (:mod:`distcalc.compute.layer`).
* **Dropout.** Megatron's defaults, 0.1 (tr11 README: "The default Megatron-LM dropout settings are inherited").
* **Pipeline.** DeepSpeed's ``PipelineEngine``: the ``TrainSchedule`` alternates forward and backward steps
  (even and odd stages out of phase) with blocking Send/Recv, which costs one forward and one backward per
  micro-batch like Megatron's 1F1B (its step rules replayed: ``tests/test_deepspeed_pipeline.py``), partitions
  the boundary activation over the TP group (``is_pipe_partitioned``) as Megatron's scatter/gather, and
  all-reduces the tied embedding's gradient once per step (``ReduceTiedGrads`` after the last micro-batch): the
  Megatron pipeline terms apply unchanged.
* **Network.** Jean Zay's 4 Omni-Path 100 Gb/s ports per node at the rate NCCL 2.10 reached on them in
  BigScience's own all-reduce benchmark of January 2022 (links.yaml ``omnipath-100g-nccl-jz``: 20.3 Gb/s per
  port, IB verbs without GPUDirect RDMA), not the 85 % of line rate assumed for Omni-Path in general. The DP
  gradient reduction, the parameter all-gather and the pipeline's Send/Recv then take 5–12 s of a sweep step.
  Held out from the rows, the same rules give BigScience's later runs (chronicles-prequel.md, 02-25 topology
  table after a PCIe/NUMA fix, 02-28 table with the BF16 optimizer) within −12…+4 % (TP 4: −3…+4 %).

What stays off: the step time, about −10…−16 % on every sweep row, more at micro-batch 1–2 than at 4–8 and more
at TP 8 than at TP 4. BigScience's single-node checks of the same width (tr11 chronicles-prequel.md, "Max
possible TFLOPs check for NHIDDEN=14336": TP 8, 6 or 10 layers, no network, GBS 512, 119–206 s/iteration) are
15–25 % slower than distcalc predicts for them (two runs of one configuration printed 130.4 and 119.2 s:
iteration-2 snapshots vary by 9 %), so what is left is in the per-GPU time of these TP-8 layers on that stack.
Not priced, and why: a fixed cost per kernel, whose signature the residual has, such as the host-synchronous
launches of ``CUDA_LAUNCH_BLOCKING=1`` (set at 40+ nodes against hangs; the chronicle's A/B measured 6.8 % at 80
GPUs and 0 % twice at 160, which fixes no per-kernel constant); the PCIe/NUMA fix of 2022-02-25 after which "all
TFLOPs have changed for the better (1-5%)" (a cluster state); the A100 GEMM rate of that PyTorch 1.11 / CUDA
11.5 stack (no published measurement; distcalc's GEMM rates are MAMF's, CUDA 12.1). The in-node topology stays
the DGX A100 preset's NVSwitch ("8 GPUs per node Using NVLink 4 inter-gpu connects", tr11 README; the NCCL log
shows four PCIe switches with two GPUs and one NIC each, the HGX A100 8-GPU layout).
"""

from __future__ import annotations

from distcalc.validation.published.rows import PublishedRun

#: DeepSpeed BF16_Optimizer.update_hp_grads after every micro-batch, per parameter:
#: ``hp_grad.data.add_(lp.grad.data.to(hp_grad.dtype)...)`` (deepspeed/runtime/bf16_optimizer.py as merged with
#: bf16 + pipeline parallelism, microsoft/DeepSpeed@56c52238, April 2022) first materialises an fp32 copy of the
#: bf16 gradient (read 2, write 4 B), then adds it into the fp32 accumulator (read 4 + 4, write 4 B): 18 B.
#: (Earlier versions of distcalc counted 10 B, as if the add read the bf16 gradient directly.)
BF16_OPTIMIZER_ACCUMULATION_BYTES = 18.0


#: PyTorch autograd's ``AccumulateGrad`` adding a micro-batch's 16-bit weight gradient into the existing 16-bit
#: ``param.grad`` (``variable_grad += new_grad``, torch/csrc/autograd/functions/accumulate_grad.h): read 2 + 2,
#: write 2 bytes per parameter and micro-batch. Megatron-DeepSpeed's linears (``megatron/mpu/layers.py``:
#: ``F.linear``, no ``gradient_accumulation_fusion``) leave the accumulation to autograd; Megatron-LM's fused
#: ``main_grad`` accumulation (in the weight-gradient GEMM) and DeepSpeed's BF16_Optimizer (which takes the
#: 16-bit gradient after every micro-batch) do not pay it.
AUTOGRAD_ACCUMULATION_BYTES = 6.0


def autograd_grad_accumulation(run: PublishedRun) -> bool:
    """Whether autograd accumulates the row's 16-bit gradients across micro-batches (Megatron-DeepSpeed with
    DeepSpeed's ZeRO-0/1 optimizer: gradients stay in ``param.grad`` until the step; ZeRO-2 reduces them per
    micro-batch through its hooks, the BF16_Optimizer takes them each micro-batch)."""
    return ("DeepSpeed" in run.framework and run.zero_stage in (0, 1) and not run.fsdp
            and not deepspeed_bf16_optimizer(run))


def deepspeed_zero(run: PublishedRun) -> bool:
    """Whether the row's optimizer is DeepSpeed's ZeRO-1/2 optimizer (Megatron-DeepSpeed with ZeRO 1 or 2)."""
    return "DeepSpeed" in run.framework and run.zero_stage in (1, 2) and not run.fsdp


def deepspeed_bf16_optimizer(run: PublishedRun) -> bool:
    """Whether the row runs DeepSpeed's BF16_Optimizer (Megatron-DeepSpeed, bf16, ZeRO 0: DeepSpeed's engine
    wraps a bf16 model without ZeRO in it)."""
    return "DeepSpeed" in run.framework and run.zero_stage == 0 and run.precision == "bf16" and not run.fsdp
