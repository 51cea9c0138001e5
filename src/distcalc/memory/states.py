"""Model states (weights, gradients, optimizer) per GPU: precision recipes and ZeRO sharding.

Precision recipes (bytes per parameter; Adam keeps two fp32 moments = 8 B; masters are fp32 = 4 B):

* ``mixed`` (default; Megatron-LM bf16/fp16 with ``accumulate_allreduce_grads_in_fp32``): 16-bit weights 2
  + fp32 gradient accumulation buffer 4 + fp32 master 4 + Adam 8 = **18 B** — the "18 bytes per parameter"
  of Korthikanti et al. 2022 Figure 1 and Megatron-LM ``docs/source/api-guide/dist_optimizer.md``.
* ``mixed-16bit-grads`` (ZeRO paper, Rajbhandari et al. 2020 §3.1): 2 + 2 + K with K = 12 (master 4 + Adam
  8) = **16 B** — the recipe of ZeRO Table 1, and of DeepSpeed's ZeRO-1/2 optimizer, which keeps ``param.grad``
  in the 16-bit model dtype (``deepspeed/runtime/zero/stage_1_and_2.py``; :mod:`distcalc.memory.stacks`).
* ``deepspeed-bf16`` (DeepSpeed ``BF16_Optimizer``, ``deepspeed/runtime/bf16_optimizer.py``, written for BLOOM):
  the bf16 ``param.grad`` of a backward pass (2 B, cleared only when the next backward starts) is added into an
  unsharded fp32 accumulator ``fp32_groups_gradients`` (4 B): gradients 6 B, **20 B** in all (BigScience tr11
  chronicle, "Rebalancing layers": "additional memory usage is 4bytes x params and it's not sharded").
* low-precision dtypes (Transformer Engine): weights stay 16-bit with fp32 masters ("fp8 compute keeps
  high-precision masters"); we add the quantised weight copies cached across micro-batches
  (:attr:`distcalc.parallel.Precision.weight_cache_bytes_per_parameter`: fp8 1 B, one cached cast — an
  assumption, TE may also keep its transpose; MXFP8 2 × 1.03 B and NVFP4 2 × 0.56 B, rowwise + columnwise).

ZeRO over the data-parallel × context-parallel group of size d (Rajbhandari et al. 2020 Table 1 /
§5; Megatron's distributed optimizer = stage 1): stage ≥ 1 divides optimizer states (masters + moments) by
d, stage ≥ 2 also gradients, stage 3 also weights. Expert weights use the expert-data-parallel group
d / ep. Every function works elementwise on NumPy arrays.
"""

from __future__ import annotations

from enum import Enum

import numpy as np

from distcalc.precision import Precision


class Recipe(str, Enum):
    """Precision recipe for model states."""

    MIXED = "mixed"
    MIXED_16BIT_GRADS = "mixed-16bit-grads"
    DEEPSPEED_BF16 = "deepspeed-bf16"


#: the 16-bit model weights: parameters stay bf16/fp16 in every recipe, low-precision ones only add cached
#: quantised copies (:class:`distcalc.precision.Precision`); not the activation dtype
PARAMETER_BYTES = 2.0
MASTER_BYTES_PER_PARAM = 4.0  # fp32 master weights
ADAM_BYTES_PER_PARAM = 8.0  # fp32 first and second moments
#: Gradient bytes per parameter of each recipe (module docstring).
GRADIENT_BYTES_PER_PARAM = {Recipe.MIXED: 4.0, Recipe.MIXED_16BIT_GRADS: 2.0, Recipe.DEEPSPEED_BF16: 6.0}


def bytes_per_parameter(recipe: Recipe, dtype: Precision = Precision.BF16) -> dict[str, float]:
    """Bytes per parameter of each model state before sharding: weights, gradients, optimizer (master +
    moments), and their total."""
    weights = PARAMETER_BYTES + Precision(dtype).weight_cache_bytes_per_parameter
    gradients = GRADIENT_BYTES_PER_PARAM[Recipe(recipe)]
    optimizer = MASTER_BYTES_PER_PARAM + ADAM_BYTES_PER_PARAM
    return {"weights": weights, "gradients": gradients, "optimizer": optimizer,
            "total": weights + gradients + optimizer}


def zero_divisors(zero_stage, shard_degree):
    """(weights, gradients, optimizer) divisors for ZeRO ``zero_stage`` over ``shard_degree`` ranks:
    optimizer / d from stage 1, gradients / d from stage 2, weights / d at stage 3 (else 1)."""
    d = np.asarray(shard_degree, dtype=float)
    z = np.asarray(zero_stage)
    return np.where(z >= 3, d, 1.0), np.where(z >= 2, d, 1.0), np.where(z >= 1, d, 1.0)


def sharded_state_bytes(parameters, bytes_per_param, divisors):
    """(weights, gradients, optimizer) bytes: ``parameters`` × each state's bytes per parameter / its ZeRO
    divisor (``bytes_per_param`` and ``divisors`` are (weights, gradients, optimizer) triples)."""
    p = np.asarray(parameters, dtype=float)
    return tuple(p * b / d for b, d in zip(bytes_per_param, divisors))


def model_state_bytes(parameters, weight_bytes, gradient_bytes, optimizer_bytes, zero_stage, shard_degree):
    """(weights, gradients, optimizer) bytes of ``parameters`` parameters held by one GPU before ZeRO,
    sharded per :func:`zero_divisors`. ZeRO Table 1: Ψ(2 + 2 + K/N_d) for P_os, Ψ(2 + (2+K)/N_d) for
    P_os+g, Ψ(2+2+K)/N_d for P_os+g+p."""
    return sharded_state_bytes(parameters, (weight_bytes, gradient_bytes, optimizer_bytes),
                               zero_divisors(zero_stage, shard_degree))
