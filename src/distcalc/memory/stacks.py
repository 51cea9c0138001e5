"""What a training stack adds to the memory nvidia-smi shows: model-state recipe, CUDA context, allocator.

:class:`~distcalc.memory.MemoryOptions` has one number per line; this module says which number a given
software stack implies, each from a published measurement or the stack's own source code:

* **Gradient dtype of DeepSpeed ZeRO-1/2** (``zero_optimizer_recipe``): DeepSpeed's ``DeepSpeedZeroOptimizer``
  (``deepspeed/runtime/zero/stage_1_and_2.py``, formerly ``stage2.py``) accumulates ``param.grad`` in the
  model's 16-bit dtype, reduces it through a 16-bit bucket and, once reduced ("No need to keep the gradients
  anymore. All gradients required by the step are in self.averaged_gradients"), frees it and keeps only this
  rank's 16-bit partition; the fp32 copy of that partition exists only inside ``step()``. The per-parameter
  states are then 2 (weights) + 2 (gradients) + 12/d (fp32 master + Adam), the "2 + 2 + K" of Rajbhandari et
  al. 2020 (ZeRO, Table 1): :attr:`Recipe.MIXED_16BIT_GRADS`. Megatron-LM's own optimizer and its distributed
  optimizer keep fp32 ``main_grad`` buffers instead (:attr:`Recipe.MIXED`, 18 B). DeepSpeed's later
  ``BF16_Optimizer`` (written for BLOOM at the end of February 2022, BigScience tr11 chronicle "Rebalancing
  layers": "accumulate gradients in fp32 … additional memory usage is 4bytes x params and it's not sharded")
  keeps both the bf16 ``param.grad`` and an unsharded fp32 accumulator: :attr:`Recipe.DEEPSPEED_BF16`, 20 B.
* **DeepSpeed ZeRO-1/2 optimizer step** (``step_buffer_bytes_per_parameter``, ``step_bucket_bytes``): after
  the last backward pass the ZeRO optimizer (``stage_1_and_2.py`` of February 2022, DeepSpeed 0.5/0.6) reduces
  the 16-bit gradients through a bucket of ``reduce_bucket_size`` elements in the model dtype (default 5e8,
  ``zero/constants.py``; ``reduce_gradients``: "with PP we must create ipg buffer, since backward is handled
  outside zero") and then, in ``step()``, builds the flat 16-bit copy of this rank's gradient partition
  (``self.flatten(self.averaged_gradients[i])``, 2 B per shard parameter) and converts it to fp32
  (``.to(self.single_partition_of_fp32_groups[i].dtype)``, 4 B), both alive until the conversion ends: 6 B per
  optimizer-shard parameter (:data:`DEEPSPEED_STEP_GRADIENT_COPY_BYTES`) plus the 1e9-byte bucket
  (:data:`DEEPSPEED_REDUCE_BUCKET_BYTES`). Each is one tensor larger than any activation block the pipeline
  freed (a layer's activations are a few hundred MB), so the caching allocator reserves new segments for them:
  they count on the reserved and nvidia-smi bases on top of the steady state.
* **Megatron-LM's fp16 ``main_grad``** (``sixteen_bit_main_grad``): fp16 training without
  ``--accumulate-allreduce-grads-in-fp32`` keeps the local DDP's ``main_grad`` buffers in fp16
  (``distributed_data_parallel.py``: ``dtype = torch.float if accumulate_allreduce_grads_in_fp32 else
  param.dtype``; sail-sg/zero-bubble-pipeline-parallelism@93af65c, :class:`distcalc.software.MainGradDtype`):
  2 B gradients, :attr:`Recipe.MIXED_16BIT_GRADS` without DeepSpeed's step buffers. Its optimizer step copies
  each ``main_grad`` to fp32 (``main_param.grad = model_param.main_grad.float()``, ``optimizer.py``) one
  parameter-sized tensor at a time, after the pipeline freed its activations: not counted (the freed activation
  blocks serve them).
* **CUDA context** (``cuda_context_bytes``): without lazy module loading the CUDA runtime loads every kernel of
  every library the process links (PyTorch, cuBLAS, cuDNN, NCCL) at context creation. BigScience measured it
  with ``torch.ones(1).cuda()`` and nvidia-smi: 1573 MiB on an A100 40GB (1271 MiB on a V100 32GB), tr11-176B
  chronicles-prequel.md, "Possible topologies for 200B" (:data:`EAGER_CUDA_CONTEXT_BYTES`). Lazy loading
  (``CUDA_MODULE_LOADING=LAZY``) exists from CUDA 11.7 (CUDA C++ Programming Guide, "Lazy Loading"), so a
  stack on an older CUDA pays the eager context; newer stacks keep :class:`MemoryOptions`' default.
* **Caching-allocator fragmentation** (``allocator_reserve_fraction``): Guo et al. 2024 (GMLake, ASPLOS '24,
  arXiv:2401.08156) measured PyTorch's caching allocator on LLM training with activation recomputation,
  offloading and ZeRO/FSDP-style sharding (irregular allocate/free patterns) on A100 80GB: virtual-memory
  stitching removes on average 15 % (up to 33 %) fragmentation, i.e. 15 % of the reserved memory is held but
  unusable (:data:`RECOMPUTE_FRAGMENTATION`). :class:`MemoryOptions` counts the reserve as a fraction of the
  rest, so a fragmentation ``f`` of the reserved pool is ``f / (1 − f)`` of it
  (:func:`reserve_fraction_of_fragmentation`). A stack without those techniques keeps the 5 % default.
* **NCCL communicators** (``comm_buffer_bytes``): the channel and NVLS buffers of every communicator the job
  holds (:mod:`distcalc.memory.nccl_buffers`), device memory outside PyTorch's allocator.
"""

from __future__ import annotations

from distcalc.memory.options import MemoryOptions
from distcalc.memory.states import Recipe
from distcalc.units import MIB

#: CUDA context with eager module loading: BigScience, ``torch.ones(1).cuda()`` + nvidia-smi on A100 40GB (2022).
EAGER_CUDA_CONTEXT_BYTES = 1573 * MIB
#: DeepSpeed ZeRO-1/2 ``step()``: flat 16-bit copy (2 B) and its fp32 conversion (4 B) per optimizer-shard
#: parameter (module docstring).
DEEPSPEED_STEP_GRADIENT_COPY_BYTES = 6.0
#: DeepSpeed's gradient-reduction bucket: ``reduce_bucket_size`` default 5e8 elements (zero/constants.py) × 2 B.
DEEPSPEED_REDUCE_BUCKET_BYTES = 500_000_000 * 2
#: First CUDA release with lazy module loading (CUDA C++ Programming Guide, "Lazy Loading").
LAZY_LOADING_CUDA = (11, 7)
#: Mean fragmentation of PyTorch's caching allocator under recomputation / sharding (GMLake, Guo et al. 2024).
RECOMPUTE_FRAGMENTATION = 0.15


def reserve_fraction_of_fragmentation(fragmentation: float) -> float:
    """:attr:`MemoryOptions.allocator_reserve_fraction` (reserve / everything else) of a fragmentation ratio
    ``(reserved − allocated) / reserved``: ``f / (1 − f)``."""
    if not 0.0 <= fragmentation < 1.0:
        raise ValueError(f"fragmentation {fragmentation!r} must be in [0, 1)")
    return fragmentation / (1.0 - fragmentation)


def cuda_context_bytes(cuda_version: tuple[int, int] | None, default: int = MemoryOptions().cuda_context_bytes) -> int:
    """CUDA context of a stack on ``cuda_version`` (major, minor): eager loading before CUDA 11.7
    (:data:`EAGER_CUDA_CONTEXT_BYTES`), else ``default`` (lazy loading; None: not stated)."""
    if cuda_version is not None and tuple(cuda_version) < LAZY_LOADING_CUDA:
        return EAGER_CUDA_CONTEXT_BYTES
    return default


def zero_optimizer_recipe(deepspeed_zero: bool, fp32_grad_accumulation: bool = False) -> Recipe:
    """Model-state recipe: DeepSpeed ZeRO-1/2 keeps 16-bit gradients (:attr:`Recipe.MIXED_16BIT_GRADS`); its
    BF16 optimizer adds an unsharded fp32 accumulator (:attr:`Recipe.DEEPSPEED_BF16`); Megatron-LM keeps fp32
    ``main_grad`` (:attr:`Recipe.MIXED`)."""
    if not deepspeed_zero:
        return Recipe.MIXED
    return Recipe.DEEPSPEED_BF16 if fp32_grad_accumulation else Recipe.MIXED_16BIT_GRADS


def stack_memory_options(*, deepspeed_zero: bool = False, fp32_grad_accumulation: bool = False,
                         cuda_version: tuple[int, int] | None = None, irregular_allocations: bool = False,
                         nccl_buffer_bytes: int | None = None, base: MemoryOptions | None = None,
                         sixteen_bit_main_grad: bool = False) -> MemoryOptions:
    """:class:`MemoryOptions` of a software stack (module docstring): the recipe of its optimizer (and the
    ZeRO-1/2 optimizer's step buffers), the CUDA context of its CUDA release, GMLake's fragmentation when it
    recomputes activations or gathers and frees sharded parameters per layer (``irregular_allocations``), and
    the NCCL buffers of the job's communicators where they were counted (``nccl_buffer_bytes``:
    :func:`distcalc.memory.nccl_buffers.nccl_buffer_bytes`; None keeps the base's ``comm_buffer_bytes``).
    ``sixteen_bit_main_grad``: Megatron-LM's fp16 ``main_grad`` buffers (module docstring), 2 B gradients."""
    base = base or MemoryOptions()
    recipe = zero_optimizer_recipe(deepspeed_zero, fp32_grad_accumulation)
    if sixteen_bit_main_grad and recipe is Recipe.MIXED:
        update_recipe = Recipe.MIXED_16BIT_GRADS
    else:
        update_recipe = recipe
    update: dict[str, object] = {
        "recipe": update_recipe, "cuda_context_bytes": cuda_context_bytes(cuda_version, base.cuda_context_bytes),
    }
    if nccl_buffer_bytes is not None:
        update["comm_buffer_bytes"] = int(nccl_buffer_bytes)
    if recipe is Recipe.MIXED_16BIT_GRADS:  # the ZeRO-1/2 optimizer's step (module docstring)
        update.update(step_buffer_bytes_per_parameter=DEEPSPEED_STEP_GRADIENT_COPY_BYTES,
                      step_bucket_bytes=DEEPSPEED_REDUCE_BUCKET_BYTES)
    if irregular_allocations:
        update["allocator_reserve_fraction"] = reserve_fraction_of_fragmentation(RECOMPUTE_FRAGMENTATION)
    return base.model_copy(update=update)
