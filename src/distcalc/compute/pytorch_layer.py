"""What the model code of a PyTorch-native Llama (torchtitan, IBM's fms) runs beyond Megatron's fused layer:
separate projection linears, autograd's gradient accumulation, and the materialised GQA key/value expansion.

Counted from the code the published runs used (torchtitan@3faaa1a ``torchtitan/models/llama/model.py``,
2024-08; foundation-model-stack@006bd7e ``fms/modules/attention.py`` and ``fms/modules/feedforward.py``,
2024-03), on one rank (``T`` tokens, ``a`` query heads, ``g`` key/value heads, ``d`` head width, TP ``t``):

* **Separate linears.** Queries, keys and values are three ``nn.Linear`` (torchtitan ``wq``, ``wk``, ``wv``;
  fms ``query``, ``key``, ``value``) and the gated MLP's gate and up projections two (``w1``, ``w3``; fms
  ``w1``, ``wg``), where Megatron runs one fused QKV GEMM and one fused gate+up GEMM. Each is its own GEMM,
  forward and in both backward products, priced by the tile model (narrower GEMMs quantise worse).
* **Weight gradients in 16 bit.** ``param.grad`` is ``None`` when the backward pass starts (``zero_grad``
  sets it so) and FSDP's unsharded parameters are bf16 (``param_dtype``), so each linear's weight gradient is
  a new 16-bit tensor: 2 B per element written (:data:`WGRAD_OUTPUT_BYTES`), where Megatron's
  gradient-accumulation fusion reads and writes its fp32 ``main_grad`` (8 B).
* **Gradient accumulation.** The norm output feeds three (attention) and two (MLP) linears, so autograd adds
  their input gradients: ``n − 1`` adds of the ``T × h`` gradient per consumer set (``InputBuffer::add``, in
  place: read two gradients, write one, :data:`GRAD_ADD_ACCESSES` = 3 elements of the activation dtype —
  6 B in 16 bit) — 3 adds per layer where the fused GEMM's single input gradient needs none.
* **GQA expansion** (``g < a``): ``repeat_kv`` (torchtitan: ``unsqueeze → expand → reshape``; fms:
  ``unsqueeze → expand → flatten``) cannot be a view, so keys and values are copied to ``a`` heads before
  SDPA: read ``T·g·d/t`` and write ``T·a·d/t`` elements per tensor forward; backward the expand's gradient
  sums them back (read ``T·a·d/t``, write ``T·g·d/t``).

Activation-sized tensors (the input-gradient adds, the key/value copies) move
:attr:`~distcalc.compute.device.DeviceCompute.activation_bytes` per element, the configured dtype's (16-bit
in every recipe: torchtitan's float8 training converts only the ``nn.Linear`` GEMMs, its keys and values stay
the bf16 outputs of those linears); the weight gradient is the parameter dtype's, 16-bit whatever the GEMM
precision (:data:`WGRAD_OUTPUT_BYTES`).

These apply to Llama-style models (RMSNorm; GPT-style PyTorch code such as nanoGPT fuses its QKV linear,
``c_attn``); the 16-bit weight gradient to any PyTorch-native model. PyTorch's flash SDPA returns its output already laid out as (batch, sequence, heads, width), so the code's
``output.transpose(1, 2).contiguous()`` copies nothing and is not counted; RMSNorm, SwiGLU and RoPE are the
eager kernels of :mod:`distcalc.compute.layer`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from distcalc.compute.device import DeviceCompute, elementwise_time_s
from distcalc.compute.flops import ModelDims

ArrayLike = Any

#: bytes per weight-gradient element the backward GEMM writes: a new ``param.grad`` in FSDP's ``param_dtype``
#: (bf16; module docstring) — the parameter dtype, deliberately not the activation dtype: parameters stay
#: 16-bit in every recipe (:class:`distcalc.precision.Precision`)
WGRAD_OUTPUT_BYTES = 2.0
#: activation elements accessed per element of autograd's in-place gradient add (read two gradients, write one)
GRAD_ADD_ACCESSES = 3.0


def separate_qkv(dims: ModelDims, tokens: ArrayLike, tp: ArrayLike) -> list[tuple[Any, Any, Any, Any]]:
    """The query, key and value GEMMs ``(batch, m, n, k)`` that replace the fused QKV GEMM (GQA/MHA layers)."""
    t = np.asarray(tp, dtype=float)
    h = dims.hidden
    return [(1, tokens, dims.heads * dims.head_dim / t, h), (1, tokens, dims.kv_heads * dims.head_dim / t, h),
            (1, tokens, dims.kv_heads * dims.v_head_dim / t, h)]


def separate_gate_up(dims: ModelDims, tokens: ArrayLike, tp: ArrayLike) -> list[tuple[Any, Any, Any, Any]]:
    """The gate and up GEMMs that replace a dense gated MLP's fused gate+up GEMM."""
    return [(1, tokens, dims.ffn / np.asarray(tp, dtype=float), dims.hidden)] * 2


def native_code_times(dims: ModelDims, device: DeviceCompute, tokens: ArrayLike, tp: ArrayLike,
                      dense_mlp: bool) -> tuple[ArrayLike, ArrayLike]:
    """(forward, backward) seconds of the gradient-accumulation adds and the GQA expansion copies of one layer
    and micro-batch (module docstring)."""
    t = np.asarray(tp, dtype=float)
    adds = (2 if not dims.kv_lora_rank else 0) + (1 if dense_mlp and dims.gated else 0)
    stream = np.asarray(tokens, dtype=float) * dims.hidden  # the linears' input: the full hidden state
    act = device.activation_bytes
    backward_bytes = adds * GRAD_ADD_ACCESSES * act * stream
    forward_bytes = 0.0 * stream
    copies = 0
    if not dims.kv_lora_rank and dims.kv_heads < dims.heads:
        per_tensor = np.asarray(tokens, dtype=float) * (dims.heads + dims.kv_heads) * dims.head_dim / t
        forward_bytes = forward_bytes + 2 * act * per_tensor  # keys and values: one element access each
        backward_bytes = backward_bytes + 2 * act * per_tensor
        copies = 2
    return (elementwise_time_s(forward_bytes, device, copies),
            elementwise_time_s(backward_bytes, device, adds + copies))
