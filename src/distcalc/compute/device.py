"""Kernel time models of one GPU: GEMMs (tile and wave quantisation, serial epilogue, roofline) and
memory-bound elementwise kernels. Every function works elementwise on NumPy arrays.

GEMM model (``C[m×n] = A[m×k]·B[k×n]``, ``batch`` independent problems). A cuBLAS/CUTLASS kernel gives
each thread block one ``tm × tn`` output tile; the tiles run in *waves* of one tile per SM:

* tiles = batch·⌈m/tm⌉·⌈n/tn⌉, waves = ⌈tiles / S⌉ (S = SM count). The main loop of one wave costs
  ``2·tm·tn·k / (P·η_core·ρ(tile) / S)``; a partly filled last wave and tiles hanging over the matrix edge
  cost as much as full ones — *wave* and *tile quantisation* (NVIDIA, "Matrix Multiplication Background
  User's Guide", Deep Learning Performance docs, sections "Tile quantization" and "Wave quantization").
  **Stream-K remainder** (``stream_k_remainder`` in compute.yaml, the Hopper presets): a grid of more tiles
  than SMs runs its whole waves tile by tile and splits the last, partial wave's tiles along k over all SMs
  (the "data-parallel + one-tile stream-K" hybrid, Osama et al. 2023, "Stream-K: Work-centric Parallel
  Decomposition for Dense Matrix-Matrix Multiplication on the GPU", PPoPP '23, Sec. 5; CUTLASS 3.x sm90
  ``StreamKScheduler``), so it costs ``tiles/S`` waves instead of ``⌈tiles/S⌉``. Measured here on H100 and
  H200 (``validate --set gpu-kernels``): the Llama-3-70B QKV GEMM at TP 8, 4096×1280×8192, 160 tiles of
  256×128 = 1.21 waves, runs at 613 / 670 TFLOP/s BF16, above the 470 that two whole waves would allow at the
  8192³ burst rate (773). A grid of at most one wave keeps ``⌈tiles/S⌉`` = 1.
* ρ(tile) = min(1, I_tile · B_L2 / P) with I_tile = 2·tm·tn / ((tm+tn)·e) FLOP per byte of A/B tile
  traffic (e bytes per operand element: 2 for bf16/fp16, 1 for fp8 — each k-step of a tile loads
  (tm+tn)·e bytes and does 2·tm·tn FLOPs): a small tile needs more L2 bandwidth per FLOP and cannot keep
  the tensor cores busy (same guide, "Dimension quantization effects" / arithmetic intensity of tiles).
  FP8 doubles the tensor-core rate P and halves e, so the same tile is exactly as L2-bound as in bf16.
* The epilogue writes C (``out_bytes`` per element: 2 for bf16; 8 for a weight-gradient GEMM that
  accumulates into an fp32 ``main_grad``, read + write, Megatron-LM ``gradient_accumulation_fusion``)
  after the main loop. It adds ``C_bytes / (B_HBM·η_mem)`` (CUTLASS docs, "Efficient GEMM in CUDA",
  epilogue); this makes small-``k`` GEMMs slower per FLOP. CUTLASS 3.x has persistent warp-specialised
  *ping-pong* kernels that overlap one tile's epilogue with the next tile's main loop (CUTLASS 3.x docs,
  *Warp-Specialized Persistent Ping-Pong kernel*) — ``epilogue_overlapped`` in compute.yaml prices that as
  ``max(main loop, epilogue)`` — but the cuBLAS kernels PyTorch calls on H100 do not behave so: measured
  here, 8192×8192×k BF16 runs at 384 TFLOP/s for k = 256 and 682 for k = 1024 (serial epilogue: 343 and
  603 predicted; overlapped: 566 and 664; the same k = 1024 shape ran at 575 as a layer GEMM), so every
  preset uses the serial form.
* The kernel cannot run faster than streaming its operands once: time ≥ (A+B+C bytes) / (B_HBM·η_mem)
  (roofline, Williams et al. 2009). cuBLAS picks the faster of its large tiles (256×128, 128×256) for
  problems that fill the GPU, and smaller tiles only when a large-tile grid is less than one wave.
* Each kernel costs at least ``kernel_overhead_s`` (launch and tail).
* **Power limit.** A GPU that runs tensor-core work back to back reaches its board power limit and lowers
  its SM clock (NVML throttle reason "SW power cap"), so a training step's GEMMs cannot run faster than
  ``P_power`` FLOP/s whatever their shape: time ≥ ``2·batch·m·n·k / P_power``. ``P_power`` is the
  *sustained* throughput of a large GEMM (8192³, 20 s back to back) measured on the GPU itself
  (``power_limited_flops_per_s`` in compute.yaml, per dtype; ``benchmarks/gpu_kernels.py``). Measured in
  this project on one H100 SXM 80GB (700 W): 677 TFLOP/s BF16 and 1218 TFLOP/s FP8 sustained, the SM clock
  down from 1980 to 1275–1770 MHz, while the same BF16 GEMM ran at 773 TFLOP/s from an idle GPU; on one
  H200: 665 and 1207. Energy per FLOP is about shape-independent, so the cap binds the GPU-filling GEMMs and
  leaves the slower, quantisation-bound ones as the tile model prices them. GPUs without a measured
  ``P_power`` have no cap (infinite).

``η_core`` is not fitted to training runs: :func:`core_efficiency_from_mamf` solves it so that this model
reproduces the *published maximum achievable matmul FLOP/s* (MAMF) of the GPU at the best shape that
benchmark found (Bekman, ml-engineering ``compute/accelerator/README.md``, "Maximum Achievable Matmul
FLOPS comparison table"); all other shapes then follow from the quantisation terms. The MAMF is a burst
figure (the best of a short sweep), so it sets the clock-unlimited main loop; the power limit above is
what bounds sustained work. For FP8 the MAMF is scaled by the dtype's peak (the same main-loop fraction of
peak); the FP8 power limit is measured on its own.

Reading a GPU's ``compute.yaml`` entry (peaks per dtype, power limit, attention kernel) is
:mod:`distcalc.compute.device_presets`; :func:`load_device` here builds the device from it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from distcalc.compute.device_presets import (DropoutKernel, compute_preset_entry, compute_preset_names,  # noqa: F401
                                             dropout_kernel, optional_float, parse_dropout_kernel, peak_for_dtype,
                                             power_limit, training_precision)
from distcalc.errors import ConfigError
from distcalc.ops import SCALAR, float_array, scalar_inputs
from distcalc.precision import Precision

ArrayLike = Any

#: Output tiles (tm, tn) that cuBLAS/CUTLASS tensor-core kernels use (CUTLASS sm80/sm90 default tiles).
TILES: tuple[tuple[int, int], ...] = ((256, 128), (128, 256), (128, 128), (128, 64), (64, 128), (64, 64))
#: bytes per C element of the MAMF benchmark's GEMM: the published table is measured in BF16 (compute.yaml
#: ``mamf_bf16_flops_per_s``; Bekman, ml-engineering ``compute/accelerator/README.md``), so C is bf16
MAMF_OUTPUT_BYTES = 2.0
#: Tiles cuBLAS uses for problems that fill the GPU.
LARGE_TILES: tuple[tuple[int, int], ...] = ((256, 128), (128, 256))


@dataclass(frozen=True)
class DeviceCompute:
    """Compute parameters of one GPU for one dtype (plain floats; units in the names)."""

    name: str
    peak_flops_per_s: float  #: dense tensor-core peak for the training dtype
    hbm_bandwidth_bytes_per_s: float
    sm_count: int
    l2_bandwidth_bytes_per_s: float
    gemm_core_efficiency: float  #: η_core: main-loop fraction of peak (from MAMF)
    memory_efficiency: float  #: η_mem: achievable fraction of HBM bandwidth for streaming kernels
    kernel_overhead_s: float  #: per-kernel launch + tail time
    flash_forward_efficiency: float  #: FlashAttention forward FLOP/s as a fraction of peak
    flash_backward_efficiency: float
    #: non-causal kernels' rates (a ring-attention step's off-diagonal blocks); None: the causal rates above
    flash_forward_noncausal_efficiency: float | None = None
    flash_backward_noncausal_efficiency: float | None = None
    #: bytes per A/B operand element (2 for bf16/fp16, 1 for fp8, MX/NV formats with their block scales):
    #: L2 tile traffic and the streaming floor (:attr:`distcalc.parallel.Precision.operand_bytes`)
    operand_bytes: float = 2.0
    #: sm90+ persistent warp-specialised kernels overlap the epilogue with the next tile's main loop
    epilogue_overlapped: bool = False
    #: a grid's partial last wave is split along k over all SMs (stream-K hybrid; module docstring)
    stream_k_remainder: bool = False
    #: the 16-bit twin that runs the attention core and the output layer when the layer GEMMs run in FP8
    #: (TransformerEngine keeps dot-product attention in BF16 unless FP8 attention is asked for:
    #: ``fp8_dot_product_attention`` defaults to off in Megatron-Core / NeMo; Megatron-Core's output layer
    #: is a plain ``ColumnParallelLinear``, not a TE module); None: they run at this device's rate
    attention: "DeviceCompute | None" = None
    #: P_power: sustained tensor-core FLOP/s under the board power limit (inf: not measured, no cap)
    power_limited_flops_per_s: float = float("inf")
    #: HBM bytes per element of the kernel that quantises a GEMM operand (0: 16-bit, nothing to quantise)
    quantize_bytes_per_element: float = 0.0
    #: bytes per activation element (:attr:`distcalc.precision.Precision.activation_bytes`)
    activation_bytes: float = Precision.BF16.activation_bytes
    #: the framework runs RMSNorm, SwiGLU and RoPE as PyTorch-eager composite ops (distcalc.compute.layer) and
    #: the rest of a PyTorch-native model's code (distcalc.compute.pytorch_layer)
    eager_elementwise: bool = False
    #: the framework's linear layers add the QKV bias and reduce bias gradients in kernels of their own
    #: (Megatron-LM local linears; distcalc.compute.layer)
    unfused_linear_bias: bool = False
    #: fused attention with unequal query/key and value head widths (MLA, d_qk = 192, d_v = 128): forward and
    #: backward FLOP/s as fractions of peak where measured (compute.yaml ``flash_mla_*``); None: as d_qk = d_v
    flash_mla_forward_efficiency: float | None = None
    flash_mla_backward_efficiency: float | None = None
    #: measured rate of the output layer's cross-entropy kernels as a fraction of HBM bandwidth over the bytes
    #: :func:`distcalc.compute.layer.head_times` counts (unfused Megatron-Core vocab-parallel CE; TE's fused
    #: Triton CE), where measured (compute.yaml ``cross_entropy_*``); None: the generic streaming rate η_mem
    cross_entropy_hbm_efficiency: float | None = None
    fused_cross_entropy_hbm_efficiency: float | None = None
    #: the attention rates are the FlashAttention-2 package's (``--attention-kernel flash2``), not the fused
    #: kernel the stack picks by default (distcalc.compute.attention)
    flash2_attention: bool = False
    #: HBM bytes per element that a weight-gradient GEMM's epilogue moves accumulating into ``main_grad``
    #: (read + write): 8 for an fp32 buffer, 4 for fp16 (:class:`distcalc.software.MainGradDtype`)
    wgrad_accumulate_bytes: float = 8.0

    @property
    def memory_bandwidth_bytes_per_s(self) -> float:
        """Achievable HBM bandwidth ``B_HBM·η_mem``."""
        return self.hbm_bandwidth_bytes_per_s * self.memory_efficiency


def tile_efficiency(tm: int, tn: int, peak_flops_per_s: float, l2_bandwidth_bytes_per_s: float,
                    operand_bytes: float = 2.0) -> float:
    """ρ(tile) = min(1, I_tile·B_L2/P), I_tile = 2·tm·tn/((tm+tn)·e) FLOP/byte (e bytes per operand)."""
    intensity = 2.0 * tm * tn / ((tm + tn) * operand_bytes)
    return min(1.0, intensity * l2_bandwidth_bytes_per_s / peak_flops_per_s)


@functools.lru_cache(maxsize=64)
def _tile_table(peak_flops_per_s: float, l2_bandwidth: float, operand_bytes: float
                ) -> tuple[tuple[tuple[int, int, float, float], ...], int]:
    """((tm, tn, 2·tm·tn, P·ρ) of every tile in :data:`TILES`, the large ones first; how many are large) —
    a pure function of the device's constants, cached."""
    order = sorted(TILES, key=lambda tile: tile not in LARGE_TILES)
    return (tuple((tm, tn, 2.0 * tm * tn, peak_flops_per_s * tile_efficiency(tm, tn, peak_flops_per_s, l2_bandwidth,
                                                                              operand_bytes)) for tm, tn in order),
            len(LARGE_TILES))


@functools.lru_cache(maxsize=64)
def _tile_axis(peak_flops_per_s: float, l2_bandwidth: float, operand_bytes: float, ndim: int
               ) -> tuple[np.ndarray, ...]:
    """:func:`_tile_table`'s columns as arrays over the tiles, the tiles a leading axis before ``ndim``
    axes of the inputs."""
    table, _ = _tile_table(peak_flops_per_s, l2_bandwidth, operand_bytes)
    shape = (len(table),) + (1,) * ndim
    return tuple(np.array(column, dtype=dtype).reshape(shape)
                 for column, dtype in zip(zip(*table), (np.int64, np.int64, float, float)))


def _tile_time_s(batch: ArrayLike, m: ArrayLike, n: ArrayLike, k: ArrayLike, sm_count: int, tm: ArrayLike,
                 tn: ArrayLike, tile_flops: ArrayLike, peak_rho: ArrayLike, xp: Any,
                 stream_k: bool = False) -> tuple[ArrayLike, ArrayLike]:
    """(tiles, main-loop time at η_core = 1) of the ``tm × tn`` tile: ``waves · 2·tm·tn·k·S / (P·ρ)`` with
    ``waves = ⌈tiles/S⌉``, or ``tiles/S`` beyond one wave under ``stream_k`` (``k`` a float)."""
    tiles = batch * (xp.ceil(m / tm) * xp.ceil(n / tn))
    waves = xp.ceil(tiles / sm_count)
    if stream_k:
        waves = xp.where(tiles > sm_count, tiles / sm_count, waves)
    return tiles, waves * tile_flops * k * sm_count / peak_rho


def _mainloop_time_s(batch: ArrayLike, m: ArrayLike, n: ArrayLike, k: ArrayLike, sm_count: int,
                     peak_flops_per_s: float, l2_bandwidth: float, operand_bytes: float = 2.0,
                     xp: Any = np, stream_k: bool = False) -> ArrayLike:
    """Main-loop time at η_core = 1 of the tile cuBLAS would pick: the fastest of the large tiles
    (:data:`LARGE_TILES`); the small tiles only when a large-tile grid does not fill one wave of SMs
    (cuBLAS heuristics trade tile efficiency against quantisation only for small problems).
    With NumPy every tile at once (the tiles a leading axis of the arrays); with ``xp`` =
    :data:`distcalc.ops.SCALAR` (one problem in Python numbers) tile by tile."""
    table, n_large = _tile_table(peak_flops_per_s, l2_bandwidth, operand_bytes)
    k = xp.asarray(k, dtype=float)
    if xp is np:
        ndim = max(np.ndim(batch), np.ndim(m), np.ndim(n), np.ndim(k))
        tiles, time = _tile_time_s(batch, m, n, k, sm_count,
                                   *_tile_axis(peak_flops_per_s, l2_bandwidth, operand_bytes, ndim), np, stream_k)
        large_tiles, best_large, best_small = tiles[:n_large].max(axis=0), time[:n_large].min(axis=0), \
            time[n_large:].min(axis=0)
    else:
        per_tile = [_tile_time_s(batch, m, n, k, sm_count, *tile, xp, stream_k) for tile in table]
        large_tiles = max(tiles for tiles, _ in per_tile[:n_large])
        best_large, best_small = (min(time for _, time in part) for part in (per_tile[:n_large], per_tile[n_large:]))
    return xp.where(large_tiles < sm_count, xp.minimum(best_large, best_small), best_large)


def gemm_time_s(batch: ArrayLike, m: ArrayLike, n: ArrayLike, k: ArrayLike, device: DeviceCompute,
                in_bytes: ArrayLike | None = None, out_bytes: ArrayLike | None = None) -> ArrayLike:
    """Time of ``batch`` GEMMs ``[m×k]·[k×n]`` (see module docstring); 0 where the GEMM is empty.
    ``in_bytes`` per A/B element defaults to the device's ``operand_bytes`` (1 under FP8), ``out_bytes`` per
    C element to its ``activation_bytes`` (the GEMM writes an activation: TransformerEngine's FP8 GEMMs
    output 16 bit, :attr:`distcalc.precision.Precision.activation_bytes`). One problem
    (every input a single number) is priced on Python numbers (:mod:`distcalc.ops`), the same formula."""
    if in_bytes is None:
        in_bytes = device.operand_bytes
    if out_bytes is None:
        out_bytes = device.activation_bytes
    one = scalar_inputs(batch, m, n, k, in_bytes, out_bytes)
    if one is not None:
        return float_array(_one_gemm_time_s(*one[0], device), one[1])
    return _gemm_time_s(batch, m, n, k, in_bytes, out_bytes, device, np)


@functools.lru_cache(maxsize=4096, typed=True)
def _one_gemm_time_s(batch: float, m: float, n: float, k: float, in_bytes: float, out_bytes: float,
                     device: DeviceCompute) -> float:
    """:func:`_gemm_time_s` of one problem on Python numbers, remembered per (problem, device): a pure function
    of frozen inputs (``device`` is a frozen dataclass), and a step prices the same few dozen shapes for every
    configuration that shares a micro-batch shape and TP degree. Bounded (4,096 problems, a few hundred KiB);
    ``typed`` keeps an int and an equal float apart, as the arithmetic does."""
    return _gemm_time_s(batch, m, n, k, in_bytes, out_bytes, device, SCALAR)


def _gemm_time_s(batch: ArrayLike, m: ArrayLike, n: ArrayLike, k: ArrayLike, in_bytes: ArrayLike,
                 out_bytes: ArrayLike, device: DeviceCompute, xp: Any) -> ArrayLike:
    mainloop = _mainloop_time_s(batch, m, n, k, device.sm_count, device.peak_flops_per_s,
                                device.l2_bandwidth_bytes_per_s, device.operand_bytes, xp,
                                device.stream_k_remainder) / device.gemm_core_efficiency
    bw = device.memory_bandwidth_bytes_per_s
    c_bytes = xp.multiply(batch, xp.multiply(m, n)) * xp.asarray(out_bytes, dtype=float)
    ab_bytes = xp.multiply(batch, xp.multiply(m, k) + xp.multiply(k, n)) * xp.asarray(in_bytes, dtype=float)
    epilogue = c_bytes / bw
    compute = xp.maximum(mainloop, epilogue) if device.epilogue_overlapped else mainloop + epilogue
    stream = (ab_bytes + c_bytes) / bw
    work = xp.multiply(batch, xp.multiply(xp.multiply(m, n), k))
    power = 2.0 * work / device.power_limited_flops_per_s
    return xp.where(work > 0, xp.maximum(xp.maximum(compute, stream), power) + device.kernel_overhead_s, 0.0)


def gemm_efficiency(batch: ArrayLike, m: ArrayLike, n: ArrayLike, k: ArrayLike, device: DeviceCompute,
                    out_bytes: ArrayLike | None = None) -> ArrayLike:
    """Achieved fraction of peak: ``2·batch·m·n·k / (time · P)`` (``out_bytes`` as :func:`gemm_time_s`)."""
    flops = 2.0 * np.multiply(batch, np.multiply(np.multiply(m, n), k))
    return flops / (gemm_time_s(batch, m, n, k, device, out_bytes=out_bytes) * device.peak_flops_per_s)


def elementwise_time_s(bytes_moved: ArrayLike, device: DeviceCompute, kernels: ArrayLike = 1) -> ArrayLike:
    """Memory-bound kernels: ``bytes / (B_HBM·η_mem) + kernels·overhead`` (0 kernels → 0)."""
    return (np.asarray(bytes_moved, dtype=float) / device.memory_bandwidth_bytes_per_s
            + np.multiply(kernels, device.kernel_overhead_s))


def core_efficiency_from_mamf(mamf_flops_per_s: float, shape: tuple[int, int, int], peak_flops_per_s: float,
                              hbm_bandwidth_bytes_per_s: float, memory_efficiency: float, sm_count: int,
                              l2_bandwidth_bytes_per_s: float, operand_bytes: float = 2.0,
                              epilogue_overlapped: bool = False, stream_k: bool = False) -> float:
    """Solve η_core so that :func:`gemm_time_s` of the MAMF benchmark's best ``(m, n, k)`` equals
    ``2mnk / MAMF``. (Serial epilogue: t = t_main(η=1)/η_core + C/(B·η_mem); overlapped: t = t_main/η_core
    when the main loop is the longer, which it is at any shape a MAMF sweep would pick.)"""
    m, n, k = shape
    measured_s = 2.0 * m * n * k / mamf_flops_per_s
    # the MAMF sweep is a BF16 matmul: its C is written in 16 bit, whatever dtype the solved device trains in
    epilogue_s = (0.0 if epilogue_overlapped
                  else m * n * MAMF_OUTPUT_BYTES / (hbm_bandwidth_bytes_per_s * memory_efficiency))
    main_s = float(_mainloop_time_s(1, m, n, k, sm_count, peak_flops_per_s, l2_bandwidth_bytes_per_s, operand_bytes,
                                    stream_k=stream_k))
    if measured_s <= epilogue_s:
        raise ConfigError(f"MAMF {mamf_flops_per_s:.3g} FLOP/s is inconsistent with the HBM bandwidth")
    return min(1.0, main_s / (measured_s - epilogue_s))


def load_device(gpu: Any, dtype: str = "bf16") -> DeviceCompute:
    """Build :class:`DeviceCompute` for a GPU (a :class:`distcalc.hardware.GpuSpec` or a preset name):
    peak FLOP/s and HBM from the GPU preset, the kernel-efficiency numbers from ``presets/compute.yaml``."""
    if isinstance(gpu, str):
        from distcalc.hardware import load_gpu

        gpu = load_gpu(gpu)
    name = getattr(gpu, "name", str(gpu))
    entry = compute_preset_entry(name)
    if not entry:
        raise ConfigError(f"no compute-efficiency preset for GPU {name!r}; known: {', '.join(compute_preset_names())}")
    peak = peak_for_dtype(gpu, dtype)
    hbm = float(gpu.hbm_bandwidth_bytes_per_s)
    mem_eff = float(entry["memory_efficiency"])
    sm = int(entry["sm_count"])
    l2 = float(entry["l2_bandwidth_bytes_per_s"])
    mamf = float(entry["mamf_bf16_flops_per_s"]) * peak / peak_for_dtype(gpu, "bf16")
    precision = training_precision(dtype)
    operand_bytes = precision.operand_bytes
    overlapped = bool(entry.get("epilogue_overlapped", False))
    stream_k = bool(entry.get("stream_k_remainder", False))
    parse_dropout_kernel(name, entry.get("attention_dropout_kernel"))  # refuses a preset naming no measured kernel
    core = core_efficiency_from_mamf(mamf, tuple(entry["mamf_shape"]), peak, hbm, mem_eff, sm, l2, operand_bytes,
                                     overlapped, stream_k)
    return DeviceCompute(
        name=name, peak_flops_per_s=peak, hbm_bandwidth_bytes_per_s=hbm, sm_count=sm,
        l2_bandwidth_bytes_per_s=l2, gemm_core_efficiency=core, memory_efficiency=mem_eff,
        kernel_overhead_s=float(entry["kernel_overhead_s"]),
        flash_forward_efficiency=float(entry["flash_forward_efficiency"]),
        flash_backward_efficiency=float(entry["flash_backward_efficiency"]),
        operand_bytes=operand_bytes, epilogue_overlapped=overlapped, stream_k_remainder=stream_k,
        attention=load_device(gpu, "bf16") if precision.low_precision else None,
        quantize_bytes_per_element=precision.quantize_bytes_per_element,
        power_limited_flops_per_s=power_limit(entry, dtype), activation_bytes=precision.activation_bytes,
        flash_mla_forward_efficiency=optional_float(entry, "flash_mla_forward_efficiency"),
        flash_mla_backward_efficiency=optional_float(entry, "flash_mla_backward_efficiency"),
        cross_entropy_hbm_efficiency=optional_float(entry, "cross_entropy_hbm_efficiency"),
        fused_cross_entropy_hbm_efficiency=optional_float(entry, "fused_cross_entropy_hbm_efficiency"),
    )


def sixteen_bit(device: DeviceCompute) -> DeviceCompute:
    """The device that runs 16-bit work: the FP8 device's BF16 twin, else the device itself."""
    return device.attention or device


def main_grad_device(device: DeviceCompute, main_grad: Any) -> DeviceCompute:
    """``device`` (and its 16-bit twin) with weight-gradient GEMMs accumulating into a ``main_grad`` of the
    dtype ``main_grad`` (a :class:`distcalc.software.MainGradDtype`): read + write, 2 × its bytes per element."""
    accumulate = 2.0 * float(main_grad.bytes_per_element)
    if accumulate == device.wgrad_accumulate_bytes:
        return device
    twin = device.attention
    return replace(device, wgrad_accumulate_bytes=accumulate,
                   attention=None if twin is None else replace(twin, wgrad_accumulate_bytes=accumulate))
