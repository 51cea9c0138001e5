"""Matmul throughput over the GEMM shapes of one transformer layer (``bench gemm``).

For ``T = b·s`` tokens, hidden ``h``, MLP width ``f``, vocabulary ``V`` and tensor-parallel degree ``t``
the forward GEMMs of a Megatron layer are (``[m×k]·[k×n]``):

=========  =====  ==========  ==========
name       m      k           n
=========  =====  ==========  ==========
qkv        T      h           (h + 2·g·d)/t   (g·d = h for MHA)
out-proj   T      a·d/t       h
mlp-up     T      h           f/t  (× 2 stacked for a gated MLP: gate and up)
mlp-down   T      f/t         h
logits     T      h           V/t
=========  =====  ==========  ==========

(Shoeybi et al. 2019 §3; Narayanan et al. 2021 §3.1 count the same GEMMs for their FLOP formula.)
Each shape is timed like the collective sweep: ``warmup`` untimed calls, ``trials`` timed calls,
median, p99 and the fastest trial; ``flops = 2·m·n·k``.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np
from pydantic import BaseModel, Field

from distcalc.errors import BenchError

ProgressFn = Callable[[int, int, str], None]


class GemmConfig(BaseModel):
    """Shapes and timing of a GEMM sweep (sizes in elements)."""

    hidden: int = Field(gt=0, description="h")
    ffn: int = Field(gt=0, description="f, MLP width")
    heads: int = Field(gt=0, description="a, query heads")
    kv_heads: int | None = Field(None, gt=0, description="g, key/value heads (default a)")
    head_dim: int | None = Field(None, gt=0, description="d (default h/a)")
    vocab: int = Field(0, ge=0, description="V (0 = no logits GEMM)")
    gated: bool = Field(False, description="gated MLP: the up GEMM has 2f columns")
    tp: int = Field(1, gt=0, description="tensor-parallel degree t (divides the split dimension)")
    tokens: list[int] = Field(min_length=1, description="T = b·s values to sweep")
    dtype: str = Field("float32", description="torch dtype of the operands")
    warmup: int = Field(3, ge=0)
    trials: int = Field(10, ge=1)
    model: str | None = Field(None, description="model preset the shapes come from, if any")


def layer_shapes(config: GemmConfig, tokens: int) -> list[tuple[str, int, int, int]]:
    """``(name, m, n, k)`` of the layer's forward GEMMs for ``tokens`` rows (module docstring)."""
    h, t = config.hidden, config.tp
    d = config.head_dim or h // config.heads
    g = config.kv_heads or config.heads
    q_width = config.heads * d
    shapes = [
        ("qkv", tokens, (q_width + 2 * g * d) // t, h),
        ("out-proj", tokens, h, q_width // t),
        ("mlp-up", tokens, (2 if config.gated else 1) * config.ffn // t, h),
        ("mlp-down", tokens, h, config.ffn // t),
    ]
    if config.vocab:
        shapes.append(("logits", tokens, config.vocab // t, h))
    bad = [name for name, m, n, k in shapes if min(m, n, k) < 1]
    if bad:
        raise BenchError(f"--tp {t} leaves empty GEMMs ({', '.join(bad)}); use a smaller --tp")
    return shapes


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def run_gemm_sweep(config: GemmConfig, device: str | None = None,
                   progress: ProgressFn | None = None) -> tuple[list[dict[str, Any]], str]:
    """Time every shape for every token count; returns the rows and the device used."""
    import torch

    device = device or _device()
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise BenchError("--device cuda was asked for but CUDA is not available; use --device cpu")
    dtype = getattr(torch, config.dtype)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    plan = [(tokens, shape) for tokens in config.tokens for shape in layer_shapes(config, tokens)]
    rows = []
    for index, (tokens, (name, m, n, k)) in enumerate(plan):
        if progress:
            progress(index, len(plan), f"{name} T={tokens}")
        a = torch.randn(m, k, dtype=dtype, device=device)
        b = torch.randn(k, n, dtype=dtype, device=device)
        out = torch.empty(m, n, dtype=dtype, device=device)
        for _ in range(config.warmup):
            torch.matmul(a, b, out=out)
        sync()
        times = []
        for _ in range(config.trials):
            start = time.perf_counter()
            torch.matmul(a, b, out=out)
            sync()
            times.append(time.perf_counter() - start)
        samples = np.array(times)
        median = float(np.median(samples))
        flops = 2.0 * m * n * k
        rows.append({"name": name, "tokens": tokens, "m": m, "n": n, "k": k, "flops": flops, "time_s": median,
                     "p99_time_s": float(np.percentile(samples, 99)), "best_time_s": float(samples.min()),
                     "trials": config.trials,
                     "flops_per_s": flops / median})
    if progress:
        progress(len(plan), len(plan), "done")
    return rows, device


def measure_copy_bandwidth(device: str | None = None, size_bytes: int = 64 * 2**20, trials: int = 5) -> float:
    """Memory bandwidth from copying a ``size_bytes`` buffer: (read + write bytes) / median time."""
    import torch

    device = device or _device()
    source = torch.ones(size_bytes // 4, dtype=torch.float32, device=device)
    target = torch.empty_like(source)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    target.copy_(source)
    sync()
    times = []
    for _ in range(trials):
        start = time.perf_counter()
        target.copy_(source)
        sync()
        times.append(time.perf_counter() - start)
    return 2.0 * size_bytes / float(np.median(times))
