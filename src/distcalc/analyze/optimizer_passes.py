"""Memory-bound passes of a Megatron-LM mixed-precision step beyond the Adam kernel: the fp16 loss scaler,
the fp32 upcast of 16-bit gradients, and the gradient packing of Megatron's and PyTorch's data-parallel wrappers.

:class:`~distcalc.analyze.AnalyzeOptions` prices the Adam step at ``optimizer_bytes_per_parameter`` (38 B:
gradient norm 4, Adam read 16 / write 12, fp32 → 16-bit parameter copy 6) on the parameters the rank's optimizer
holds, ``grad_buffer_zero_bytes_per_parameter`` on its local gradients every step and
``grad_prescale_bytes_per_parameter`` on its local gradients where the data-parallel group has more than one
rank. Stacks that train in fp16 or keep 16-bit gradients run more than that, counted here from the code, per
parameter and step (bytes read + written in HBM):

* **Loss-scaler unscale** (fp16; any grad scaler, also the constant one ``--loss-scale`` sets):
  ``MixedPrecisionOptimizer._unscale_main_grads_and_check_for_nan`` calls
  ``torch._amp_foreach_non_finite_check_and_unscale_`` on the fp32 main gradients — read 4, write 4 =
  :data:`LOSS_SCALER_UNSCALE_BYTES` — then all-reduces ``found_inf`` over the model-parallel group and reads it
  on the host (a latency term, not priced). bf16 without ``--loss-scale`` has no grad scaler and skips it.
* **fp32 upcast of 16-bit gradients**: ``_copy_model_grads_to_main_grads`` sets
  ``main_param.grad = model_param.main_grad.float()`` (or ``model_param.grad.float()`` without ``main_grad``),
  which materialises an fp32 copy of a 16-bit gradient — read 2, write 4 = :data:`GRAD_UPCAST_BYTES`; a no-op for
  an fp32 ``main_grad`` (bf16 stacks, ``--accumulate-allreduce-grads-in-fp32``).
* **Data-parallel gradient packing**, per local gradient of ``g`` bytes (2 for 16-bit, 4 for fp32), where
  DP > 1 (:class:`DataParallelWrapper`):

  - Megatron local DDP with contiguous buffers: ``buffer_.data /= data_parallel_world_size`` before the
    all-reduce — read + write, ``2·g``; the buffer is zeroed every step (``zero_grad_buffer``, ``g``).
  - Megatron local DDP without them (the SC21 code's default for fp16): ``allreduce_gradients`` flattens
    ``param.grad`` into one tensor (``_flatten_dense_tensors``), divides it in place and copies the reduced
    values back into every ``param.grad`` — three read + write passes, ``6·g``; gradients are set to None,
    not zeroed (``zero_grad(set_to_none=True)``).
  - PyTorch DDP (``gradient_as_bucket_view=False``, the default): the reducer copies each gradient into its
    bucket while dividing by the world size (``copy_grad_to_bucket``: ``mul_out(bucket_view, grad, 1/n)``) and
    copies the reduced bucket back (``finalize_bucket_dense``) — ``4·g``; gradients set to None.

Sources: NVIDIA/Megatron-LM@de7dc40f88 (2021-08-10, "scripts for sc21": ``megatron/optimizer/optimizer.py``,
``megatron/model/distributed.py``, ``megatron/training.py`` ``train_step``, ``examples/sc21/CONFIG.sh`` ``--fp16
--loss-scale 8192``, no ``--use-contiguous-buffers-in-ddp``); sail-sg/zero-bubble-pipeline-parallelism
``megatron/optimizer/optimizer.py`` (the same ``_copy_model_grads_to_main_grads`` and unscale, also on its
post-validation path ``pre_step``); PyTorch 1.8 ``torch/csrc/distributed/c10d/reducer.cpp``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from distcalc.software import DataParallelWrapper

#: ``torch._amp_foreach_non_finite_check_and_unscale_`` over the fp32 main gradients: read 4 + write 4 B
LOSS_SCALER_UNSCALE_BYTES = 8.0
#: ``main_grad.float()`` / ``grad.float()`` of a 16-bit gradient into a new fp32 tensor: read 2 + write 4 B
GRAD_UPCAST_BYTES = 6.0
#: read + write passes over the local gradients of each data-parallel wrapper where DP > 1 (module docstring)
DP_PACKING_PASSES = {DataParallelWrapper.LOCAL_BUFFERS: 1, DataParallelWrapper.LOCAL_COALESCED: 3,
                     DataParallelWrapper.TORCH_DDP: 2}


@dataclass(frozen=True)
class StepPasses:
    """Bytes per parameter that a stack's step adds to :class:`~distcalc.analyze.AnalyzeOptions`' Adam pricing:
    ``optimizer_extra_bytes`` on the parameters the optimizer holds, ``grad_zero_bytes`` on every local gradient
    (replaces ``grad_buffer_zero_bytes_per_parameter``), ``grad_dp_pass_bytes`` on every local gradient where DP >
    1 (replaces ``grad_prescale_bytes_per_parameter``)."""

    optimizer_extra_bytes: float
    grad_zero_bytes: float
    grad_dp_pass_bytes: float


def megatron_step_passes(loss_scaler: bool, grad_bytes: float, wrapper: DataParallelWrapper) -> StepPasses:
    """The step passes of Megatron-LM's ``Float16OptimizerWithFloat16Params`` (module docstring).

    ``loss_scaler``: the run has a grad scaler (fp16 always; bf16 only with ``--loss-scale``); ``grad_bytes``:
    bytes of one local gradient element (2 for 16-bit ``main_grad`` or ``param.grad``, 4 for fp32 ``main_grad``);
    ``wrapper``: the data-parallel wrapper. Formula: extra = 8·[scaler] + 6·[g = 2]; zero = g with contiguous
    buffers, else 0; DP pass = 2·g · passes(wrapper)."""
    if grad_bytes not in (2.0, 4.0):
        raise ValueError(f"grad_bytes {grad_bytes!r} is not a gradient element size; valid: 2 (16-bit), 4 (fp32)")
    wrapper = DataParallelWrapper(wrapper)
    if wrapper not in DP_PACKING_PASSES:
        raise ValueError(f"wrapper {wrapper.value!r} has no Megatron-LM optimizer passes; valid: "
                         + ", ".join(w.value for w in DP_PACKING_PASSES))
    extra = (LOSS_SCALER_UNSCALE_BYTES if loss_scaler else 0.0) + (GRAD_UPCAST_BYTES if grad_bytes == 2.0 else 0.0)
    zero = grad_bytes if wrapper is DataParallelWrapper.LOCAL_BUFFERS else 0.0
    return StepPasses(optimizer_extra_bytes=extra, grad_zero_bytes=zero,
                      grad_dp_pass_bytes=2.0 * grad_bytes * DP_PACKING_PASSES[wrapper])


def step_pass_updates(optimizer_bytes_per_parameter: float, loss_scaler: bool, grad_bytes: float,
                      wrapper: DataParallelWrapper) -> dict[str, Any]:
    """The :class:`~distcalc.analyze.AnalyzeOptions` fields that price :func:`megatron_step_passes` on top of an
    Adam step of ``optimizer_bytes_per_parameter``; no change for ``megatron-core`` (the options' own pricing)."""
    if DataParallelWrapper(wrapper) is DataParallelWrapper.MEGATRON_CORE:
        return {}
    p = megatron_step_passes(loss_scaler, grad_bytes, wrapper)
    return {"optimizer_bytes_per_parameter": optimizer_bytes_per_parameter + p.optimizer_extra_bytes,
            "grad_buffer_zero_bytes_per_parameter": p.grad_zero_bytes,
            "grad_prescale_bytes_per_parameter": p.grad_dp_pass_bytes}
