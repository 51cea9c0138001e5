"""The output layer's cross-entropy: bytes per logit of each implementation and their kernel time.

The loss streams every logit of the micro-batch (tokens × vocabulary/TP) through HBM; its kernels are memory
bound. Bytes per logit, counted from each implementation's code (16-bit logits, fp32 arithmetic):

* ``unfused`` — Megatron-Core ``tensor_parallel/cross_entropy.py`` (``VocabParallelCrossEntropy``), op by op:
  forward ``.float()`` (read 2, write 4), ``max`` (read 4), in-place ``-= max`` (4 + 4), in-place ``exp``
  (4 + 4), ``sum`` (read 4), in-place ``div_`` (4 + 4) = 38 B in 6 kernels; backward ``mul_`` of the saved
  softmax (4 + 4) and autograd's cast back to 16 bit (4 + 2) = 14 B in 2 kernels. SimuMax counts the same
  (``ce_theoretical_bytes``, MooreThreads/SimuMax ``simu_tools/efficency_test/test_ce_permute_efficiency.py``).
* ``native-fused`` — ``--cross-entropy-loss-fusion`` with Megatron-Core's default
  ``--cross-entropy-fusion-impl native`` (``megatron/core/fusions/fused_cross_entropy.py``): the same ops
  grouped into ``jit_fuser`` (``torch.compile``) functions, each one fused kernel over the logits:
  ``calculate_logits_max`` (read 2, write the fp32 copy 4), ``calculate_predicted_logits`` (subtract and exp in
  place, sum: 4 + 4), ``calculate_cross_entropy_loss`` (``div_`` in place: 4 + 4) = 22 B in 3 kernels;
  backward ``calculate_gradients`` reads the fp32 softmax and writes the 16-bit gradient (4 + 2) = 6 B in 1.
* ``te-fused`` — ``--cross-entropy-fusion-impl te``: TransformerEngine's Triton kernels
  (``transformer_engine/pytorch/triton/cross_entropy.py``): forward ``online_softmax_kernel`` reads the
  16-bit logits once (2 B; the loss kernel reads only the per-row max/sum), backward
  ``cross_entropy_backward_kernel`` reads them and writes the gradient in place (2 + 2 B).

Rate: a GPU whose compute.yaml entry has a *measured* rate for the kernel (``cross_entropy_hbm_efficiency``
for ``unfused``, ``fused_cross_entropy_hbm_efficiency`` for ``te-fused``: kernel time over the bytes counted
here, as a fraction of the HBM bandwidth) runs at it; otherwise the bytes stream at the generic elementwise
rate ``B_HBM·η_mem``. Measured on B200 only (SimuMax's DGX B200 system file), where these kernels reach
0.36 and 0.23 of HBM bandwidth, against 0.75 for the generic streaming kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.compute.device import DeviceCompute
from distcalc.software import CrossEntropyKernel

ArrayLike = Any


#: bytes per logit (forward, backward) and logits-sized kernels (forward, backward) of each implementation
CE_BYTES_PER_LOGIT: dict[CrossEntropyKernel, tuple[float, float]] = {
    CrossEntropyKernel.UNFUSED: (2 + 4 + 4 + 8 + 8 + 4 + 8, 8 + 6),
    CrossEntropyKernel.NATIVE_FUSED: ((2 + 4) + (4 + 4) + (4 + 4), 4 + 2),
    CrossEntropyKernel.TE_FUSED: (2, 2 + 2),
}
CE_KERNELS: dict[CrossEntropyKernel, tuple[int, int]] = {
    CrossEntropyKernel.UNFUSED: (6, 2),
    CrossEntropyKernel.NATIVE_FUSED: (3, 1),
    CrossEntropyKernel.TE_FUSED: (2, 1),
}
CE_FORWARD_BYTES_PER_LOGIT, CE_BACKWARD_BYTES_PER_LOGIT = CE_BYTES_PER_LOGIT[CrossEntropyKernel.UNFUSED]


def _measured_efficiency(device: DeviceCompute, kernel: CrossEntropyKernel) -> float | None:
    if kernel is CrossEntropyKernel.UNFUSED:
        return device.cross_entropy_hbm_efficiency
    if kernel is CrossEntropyKernel.TE_FUSED:
        return device.fused_cross_entropy_hbm_efficiency
    return None  # Megatron's torch.compile'd kernels: not measured on any GPU


def cross_entropy_times(device: DeviceCompute, logits: ArrayLike,
                        kernel: CrossEntropyKernel = CrossEntropyKernel.UNFUSED) -> tuple[ArrayLike, ArrayLike]:
    """Forward and backward seconds of the cross-entropy over ``logits`` elements (module docstring), launches
    included (``kernel_overhead_s`` per logits-sized kernel)."""
    kernel = CrossEntropyKernel(kernel)
    eff = _measured_efficiency(device, kernel)
    rate = device.memory_bandwidth_bytes_per_s if eff is None else device.hbm_bandwidth_bytes_per_s * eff
    (fwd_b, bwd_b), (fwd_k, bwd_k) = CE_BYTES_PER_LOGIT[kernel], CE_KERNELS[kernel]
    return (np.multiply(logits, fwd_b) / rate + fwd_k * device.kernel_overhead_s,
            np.multiply(logits, bwd_b) / rate + bwd_k * device.kernel_overhead_s)
