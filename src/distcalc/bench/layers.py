"""A small transformer layer in plain torch, with Megatron-style tensor parallelism.

The layer is pre-norm GPT: ``x + Out(Attn(QKV(LN1(x))))`` then ``x + Down(act(Up(LN2(x))))`` with
LayerNorm, biases everywhere, multi-head attention (causal) and a non-gated MLP — exactly the
parameters :func:`distcalc.model.params.layer_parameters` counts for a ``ModelSpec`` with
``norm_type=layernorm``, ``attention_qkv_bias``, ``attention_out_bias``, ``mlp_bias`` and ``gated_mlp=False``.

Tensor parallelism (Shoeybi et al. 2019, arXiv:1909.08053 §3, Fig. 3–4): QKV and MLP-up are column-parallel
(each of the t ranks holds a/t heads, f/t MLP columns and its slice of their biases), Out and MLP-down are
row-parallel (the rank holds the matching rows; their biases are replicated and added after the reduction).
The conjugate operators are

* ``f`` (before a column-parallel GEMM): identity forward, AllReduce of the input gradient backward;
* ``g`` (after a row-parallel GEMM): AllReduce forward, identity backward;

so each layer runs 2 AllReduce of ``b·s·h`` elements forward and 2 backward. With sequence parallelism
(Korthikanti et al. 2022, arXiv:2205.05198 §4.2.2) the norms and residuals run on ``s/t`` of the sequence,
``g`` becomes ReduceScatter forward / AllGather backward, and ``f`` becomes AllGather forward /
ReduceScatter backward, plus the AllGather that Megatron-LM re-runs in the backward pass to rebuild the
column-parallel GEMM's full input for its weight gradient (``layers.py``,
``LinearWithGradAccumulationAndAsyncCommunication``), since only the sequence shard is kept.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as functional
from torch import nn

from distcalc.bench.counting import CountingComm


class TensorParallel:
    """The TP group a layer reduces over: the counting wrapper, the group handle and its size."""

    def __init__(self, comm: CountingComm, group: Any, size: int, sequence_parallel: bool = False) -> None:
        self.comm, self.group, self.size, self.sequence_parallel = comm, group, size, sequence_parallel

    def all_reduce(self, tensor: torch.Tensor) -> torch.Tensor:
        tensor = tensor.contiguous()
        self.comm.all_reduce(tensor, group=self.group, tag="tp")
        return tensor

    def all_gather_sequence(self, shard: torch.Tensor) -> torch.Tensor:
        """[b, s/t, h] → [b, s, h] (gathers along the sequence)."""
        b, s_part, h = shard.shape
        flat = torch.empty(self.size * b * s_part * h, dtype=shard.dtype, device=shard.device)
        staged = shard.transpose(0, 1).contiguous()  # [s/t, b, h]: sequence-major, as Megatron lays it out
        self.comm.all_gather(flat, staged.view(-1), group=self.group, tag="tp")
        return flat.view(self.size * s_part, b, h).transpose(0, 1)

    def reduce_scatter_sequence(self, full: torch.Tensor) -> torch.Tensor:
        """[b, s, h] → [b, s/t, h] (sums over ranks, keeps this rank's sequence shard)."""
        b, s, h = full.shape
        staged = full.transpose(0, 1).contiguous().view(-1)
        out = torch.empty(staged.numel() // self.size, dtype=full.dtype, device=full.device)
        self.comm.reduce_scatter(out, staged, group=self.group, tag="tp")
        return out.view(s // self.size, b, h).transpose(0, 1)


class _Copy(torch.autograd.Function):
    """``f``: identity forward, AllReduce backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, tp: TensorParallel) -> torch.Tensor:
        ctx.tp = tp
        return x

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return ctx.tp.all_reduce(grad), None


class _Reduce(torch.autograd.Function):
    """``g``: AllReduce forward, identity backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, tp: TensorParallel) -> torch.Tensor:
        return tp.all_reduce(x.clone())

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return grad, None


class _GatherLinear(torch.autograd.Function):
    """Sequence-parallel ``f`` fused with the column-parallel GEMM, as Megatron-LM does: forward AllGather
    of the sequence shard then ``y = x Wᵀ + b``; backward ReduceScatter of the input gradient, and a second
    AllGather of the saved shard to form the weight gradient."""

    @staticmethod
    def forward(ctx: Any, shard: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                tp: TensorParallel) -> torch.Tensor:
        ctx.tp = tp
        ctx.save_for_backward(shard, weight)
        return functional.linear(tp.all_gather_sequence(shard), weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        shard, weight = ctx.saved_tensors
        tp: TensorParallel = ctx.tp
        grad_input = tp.reduce_scatter_sequence(grad.matmul(weight))
        full = tp.all_gather_sequence(shard)
        grad_weight = grad.reshape(-1, grad.shape[-1]).t().matmul(full.reshape(-1, full.shape[-1]))
        return grad_input, grad_weight, grad.sum(dim=(0, 1)), None


class _ScatterReduce(torch.autograd.Function):
    """Sequence-parallel ``g``: ReduceScatter forward, AllGather backward."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, tp: TensorParallel) -> torch.Tensor:
        ctx.tp = tp
        return tp.reduce_scatter_sequence(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:
        return ctx.tp.all_gather_sequence(grad.contiguous()), None


class ColumnParallelLinear(nn.Module):
    """``y = x Wᵀ + b`` with W's output columns split over the TP group (input replicated, or
    sequence-sharded and gathered under sequence parallelism)."""

    def __init__(self, in_features: int, out_features: int, tp: TensorParallel) -> None:
        super().__init__()
        self.tp = tp
        self.linear = nn.Linear(in_features, out_features // tp.size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.tp.size == 1:
            return self.linear(x)
        if self.tp.sequence_parallel:
            return _GatherLinear.apply(x, self.linear.weight, self.linear.bias, self.tp)
        return self.linear(_Copy.apply(x, self.tp))


class RowParallelLinear(nn.Module):
    """``y = reduce(x_part W_partᵀ) + b``: W's input rows split over the TP group, bias replicated and added
    after the AllReduce (ReduceScatter under sequence parallelism)."""

    def __init__(self, in_features: int, out_features: int, tp: TensorParallel) -> None:
        super().__init__()
        self.tp = tp
        self.linear = nn.Linear(in_features // tp.size, out_features, bias=False)
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        partial = self.linear(x)
        if self.tp.size > 1:
            partial = (_ScatterReduce if self.tp.sequence_parallel else _Reduce).apply(partial, self.tp)
        return partial + self.bias


class TransformerLayer(nn.Module):
    """One pre-norm GPT layer (see the module docstring), tensor-parallel over ``tp``."""

    def __init__(self, hidden: int, heads: int, ffn: int, tp: TensorParallel) -> None:
        super().__init__()
        self.heads_local = heads // tp.size
        self.head_dim = hidden // heads
        self.ln1 = nn.LayerNorm(hidden)
        self.qkv = ColumnParallelLinear(hidden, 3 * hidden, tp)
        self.out = RowParallelLinear(hidden, hidden, tp)
        self.ln2 = nn.LayerNorm(hidden)
        self.up = ColumnParallelLinear(hidden, ffn, tp)
        self.down = RowParallelLinear(ffn, hidden, tp)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qkv = self.qkv(self.ln1(x))
        b, s, _ = qkv.shape
        q, k, v = qkv.view(b, s, 3, self.heads_local, self.head_dim).permute(2, 0, 3, 1, 4)
        attended = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(attended.transpose(1, 2).reshape(b, s, self.heads_local * self.head_dim))
        return x + self.down(functional.gelu(self.up(self.ln2(x))))
