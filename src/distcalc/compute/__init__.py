"""Compute time of a transformer on one GPU: FLOPs per operation and a roofline time per operation.

* :mod:`distcalc.compute.device` — the GPU's compute parameters (:class:`DeviceCompute`) and the kernel
  time models: GEMM (tile/wave quantisation, serial epilogue, roofline) and memory-bound elementwise work.
* :mod:`distcalc.compute.flops` — model dimensions and the FLOP counts used for MFU/HFU.
* :mod:`distcalc.compute.layer` — per-layer forward / backward / recompute times for a configuration.

All formulas work elementwise on NumPy arrays (one configuration per element).
"""

from __future__ import annotations

from distcalc.compute.device import DeviceCompute, elementwise_time_s, gemm_efficiency, gemm_time_s, load_device
from distcalc.compute.flops import ModelDims, model_dims, model_flops_per_step, hardware_flops_per_step
from distcalc.compute.layer import HeadTimes, LayerTimes, head_times, layer_times

__all__ = [
    "DeviceCompute",
    "HeadTimes",
    "LayerTimes",
    "ModelDims",
    "elementwise_time_s",
    "gemm_efficiency",
    "gemm_time_s",
    "hardware_flops_per_step",
    "head_times",
    "layer_times",
    "load_device",
    "model_dims",
    "model_flops_per_step",
]
