"""Kernel times measured by distcalc on lent GPUs (``gpu-kernels``) against the compute model.

``data/validation/distcalc2026_gpu_kernels.csv`` was written by ``benchmarks/gpu_kernels.py`` (one H100 SXM
80GB and one H200, 2026-11-24; raw files in ``docs/measurements``) after a power-limit preheat, so every
kernel ran in the state a training step runs in. Two numbers of it set model constants — the *sustained*
8192³ throughput per GPU and dtype is ``power_limited_flops_per_s`` in ``presets/compute.yaml`` — and are
therefore not cases here. Everything else was measured, not fitted:

* GEMMs of a Llama-3-70B layer (forward, input and weight gradient, TP 1–8, 4096 and 8192 tokens; BF16
  and FP8 via ``torch._scaled_mm``): the mean and worst error per GPU and dtype, and the short-k, skinny and
  large square shapes one by one. Squares below 2048 are not cases: back-to-back ``torch.matmul`` calls of
  under ~20 µs are paced by PyTorch's host dispatch, not by the GPU (1.9 TFLOP/s at 256³). They measure that
  dispatch floor per GPU and call (:func:`host_floor_s`: H100 BF16 ``torch.matmul`` 18.9 µs, FP8
  ``torch._scaled_mm`` 31.7 µs), and any other GEMM timed within 10 % of it (the spread of those tiny calls'
  own samples, p10-p90) measured the host, not the kernel, and is not a case either: H100 FP8 2048³ (31.4 µs,
  slower than the BF16 2048³'s 25.0 µs), H100 FP8 128×8192×8192 (34.2 µs) and H200 FP8 2048³ (19.5 µs; floor
  29.1 µs).
* Fused causal / non-causal attention through cuDNN, the backend TransformerEngine (Megatron-Core, NeMo)
  uses on Hopper, forward and backward; PyTorch's own FlashAttention-2 kernels, 2× slower on H100, are in
  the CSV but are not what the model describes.
* Streaming elementwise kernels (copy, add, RMSNorm, SwiGLU) priced by bytes at ``η_mem`` of HBM bandwidth.
  ``swiglu-fwd`` is the eager expression ``F.silu(gu[:, :f]) * gu[:, f:]``: two kernels, SiLU writing its
  output and the product reading it back — priced as the model prices eager SwiGLU
  (:data:`distcalc.compute.layer.EAGER_SWIGLU_BYTES`, 10 B per element over two kernels), not as the fused
  kernel the benchmark's byte count (6 B) describes. ``F.rms_norm`` is one fused CUDA kernel in the PyTorch
  that ran (``aten::_fused_rms_norm``, pytorch/pytorch PR #153666, 2.8 and later), so its bytes stand.
"""

from __future__ import annotations

import numpy as np

from distcalc.compute.device import elementwise_time_s, gemm_time_s, load_device
from distcalc.compute.layer import EAGER_SWIGLU_BYTES, flash_attention_times
from distcalc.validation.base import CaseSet, ValidationCase, read_validation_csv

CSV = "distcalc2026_gpu_kernels.csv"
SOURCE = "distcalc measurements, benchmarks/gpu_kernels.py (H100 SXM 80GB, H200; 2026-11-24)"


def _predicted_s(row: dict[str, str]) -> float:
    device = load_device(row["gpu"], row["dtype"])
    if row["kind"] == "gemm":
        return float(gemm_time_s(1, int(row["m"]), int(row["n"]), int(row["k"]), device))
    if row["kind"] == "attention":
        d = int(row["head_dim"])
        forward, backward = flash_attention_times(device, int(row["heads"]), int(row["seq"]), int(row["kv_seq"]),
                                                  d, d, causal=row["causal"] == "1")
        return float(forward if row["op"] == "forward" else backward)
    if row["name"] == "swiglu-fwd":  # eager silu + product (module docstring); the CSV counts 3 x 2 B per element
        elements = float(row["bytes"]) / (3 * device.activation_bytes)
        return float(elementwise_time_s(EAGER_SWIGLU_BYTES[0] * elements, device, 2))
    return float(elementwise_time_s(float(row["bytes"]), device, 1))


#: how far above the tiny squares' dispatch floor a GEMM must run to count as GPU-bound: the p10-p90 spread
#: of those tiny calls' own samples (H100 FP8 256³-1024³: 29.5-34.9 µs around medians of 30.8-31.7)
HOST_FLOOR_MARGIN = 0.10


def host_floor_s(rows: list[dict[str, str]]) -> dict[tuple[str, str], float]:
    """Per (gpu, dtype): the slowest median of the sub-2048 squares, whose calls are paced by PyTorch's host
    dispatch (module docstring) — the time below which a back-to-back GEMM measures the host."""
    floor: dict[tuple[str, str], float] = {}
    for row in rows:
        if row["kind"] == "gemm" and row["set"] == "square" and int(row["m"]) < 2048:
            key = (row["gpu"], row["dtype"])
            floor[key] = max(floor.get(key, 0.0), float(row["time_s"]))
    return floor


def host_paced(row: dict[str, str], floor: dict[tuple[str, str], float]) -> bool:
    """A GEMM timed within :data:`HOST_FLOOR_MARGIN` of its call's dispatch floor (or a sub-2048 square)."""
    if row["kind"] != "gemm":
        return False
    if row["set"] == "square" and int(row["m"]) < 2048:
        return True
    return float(row["time_s"]) <= floor.get((row["gpu"], row["dtype"]), 0.0) * (1 + HOST_FLOOR_MARGIN)


def _label(row: dict[str, str]) -> str:
    if row["kind"] == "gemm":
        return f"{row['gpu']} {row['dtype']} GEMM {row['m']}x{row['n']}x{row['k']} ({row['set']})"
    if row["kind"] == "attention":
        mask = "causal" if row["causal"] == "1" else "full"
        return (f"{row['gpu']} attention {row['op']} {row['heads']} heads {row['seq']}x{row['kv_seq']} {mask} "
                f"({row['backend']})")
    return f"{row['gpu']} {row['name']} ({row['bytes']} B)"


def gemm_layer_errors(rows: list[dict[str, str]] | None = None) -> dict[tuple[str, str], np.ndarray]:
    """Relative errors (predicted/measured − 1) of the Llama-3-70B layer GEMMs per (gpu, dtype), over
    ``rows`` of the CSV (read when not given)."""
    errors: dict[tuple[str, str], list[float]] = {}
    for row in read_validation_csv(CSV) if rows is None else rows:
        if row["kind"] == "gemm" and row["set"] == "llama3-70b":
            errors.setdefault((row["gpu"], row["dtype"]), []).append(_predicted_s(row) / float(row["time_s"]) - 1)
    return {key: np.array(value) for key, value in errors.items()}


def _cases() -> list[ValidationCase]:
    cases = []
    rows = read_validation_csv(CSV)
    floor = host_floor_s(rows)
    for (gpu, dtype), err in gemm_layer_errors(rows).items():
        note = f"{len(err)} GEMMs: qkv, out-proj, mlp-up, mlp-down x fwd/dgrad/wgrad x TP 1,2,4,8 x T 4096,8192"
        cases += [
            ValidationCase(f"{gpu} {dtype} layer GEMMs mean error", 100 * float(err.mean()), 0.0, "%", "absolute",
                           5.0, note, "measured"),
            ValidationCase(f"{gpu} {dtype} layer GEMMs mean |error|", 100 * float(np.abs(err).mean()), 0.0, "%",
                           "absolute", 6.0, note, "measured"),
            ValidationCase(f"{gpu} {dtype} layer GEMMs worst |error|", 100 * float(np.abs(err).max()), 0.0, "%",
                           "absolute", 20.0, note, "measured"),
        ]
    for row in rows:
        kind = row["kind"]
        if kind == "gemm" and (row["set"] == "llama3-70b" or host_paced(row, floor)):
            continue
        if kind == "sustained" or (kind == "attention" and row["backend"] != "cudnn"):
            continue
        tolerance = {"gemm": 0.15, "attention": 0.20, "elementwise": 0.30}[kind]
        cases.append(ValidationCase(_label(row), _predicted_s(row) * 1e6, float(row["time_s"]) * 1e6, "us",
                                    "relative", tolerance, kind="measured"))
    return cases


CASE_SETS = (
    CaseSet("gpu-kernels", "GEMM, fused-attention and elementwise kernel times measured on an H100 and an H200",
            SOURCE, _cases),
)
