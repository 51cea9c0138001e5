"""Training precisions: the compute dtype of the layer GEMMs and the bytes each recipe moves and keeps.

Parameters stay 16-bit with fp32 masters in every recipe; the low-precision recipes quantise GEMM operands on
the fly (TransformerEngine) and cache quantised weights. The byte counts here are used by the compute model
(:mod:`distcalc.compute`) and the memory model (:mod:`distcalc.memory.states`).
"""

from __future__ import annotations

from enum import Enum


class Precision(str, Enum):
    """Compute dtype of the layer GEMMs. Parameters are kept in 16 bit with fp32 masters in every recipe; the
    low-precision recipes quantise GEMM operands on the fly (TransformerEngine) and cache quantised weights.

    * ``fp8``: per-tensor scaling (delayed or current), E4M3/E5M2, 1 byte per element (Micikevicius et al.
      2022); Hopper's FP8 MMA takes only the TN layout, so TE writes each tensor and its transpose.
    * ``mxfp8``: OCP Microscaling MXFP8 — 1-byte elements with one E8M0 scale per block of 32 (OCP MX
      Specification v1.0, 2023); Blackwell only. Scaling blocks run along the reduction dimension, so a
      tensor and its transpose are quantised separately (rowwise + columnwise copies; TE MXFP8 recipe).
    * ``nvfp4``: NVIDIA NVFP4 — 4-bit E2M1 elements with one E4M3 scale per block of 16 plus a per-tensor
      fp32 scale (NVIDIA, "Pretraining Large Language Models with NVFP4", arXiv:2509.25149); Blackwell only.
    """

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    MXFP8 = "mxfp8"
    NVFP4 = "nvfp4"

    @property
    def low_precision(self) -> bool:
        """True when the layer GEMMs run on quantised operands (the attention core stays 16-bit)."""
        return self in _OPERAND_BYTES and self not in (Precision.BF16, Precision.FP16)

    @property
    def activation_bytes(self) -> float:
        """Bytes per activation element stored for the backward pass or sent between GPUs (the ``e`` of
        Korthikanti et al. 2022 §4, 16-bit: 2): 2 in every recipe. The low-precision recipes quantise GEMM
        operands on the fly inside the linear layers (TransformerEngine user guide, "Using FP8 with
        Transformer Engine"), so the residual stream, the layer outputs, the tensors TP/CP/EP/PP exchange and
        the recomputation checkpoints are counted 16-bit; quantised GEMM inputs a recipe may keep for its
        backward pass instead are not modelled (an assumption of the memory model, stated here once)."""
        return 2.0

    @property
    def operand_bytes(self) -> float:
        """Bytes per GEMM operand element, block scales included (MXFP8 1 + 1/32, NVFP4 0.5 + 1/16)."""
        return _OPERAND_BYTES[self]

    @property
    def quantize_bytes_per_element(self) -> float:
        """HBM bytes per element of the quantisation kernel: read 16 bits, write the low-precision tensor
        and its transpose (two copies: TE cast_transpose for fp8; rowwise + columnwise for MX/NV formats);
        0 for 16-bit."""
        return 2.0 + 2.0 * self.operand_bytes if self.low_precision else 0.0

    @property
    def weight_cache_bytes_per_parameter(self) -> float:
        """Quantised weight copies cached across micro-batches, bytes per parameter: fp8 one cast (1 B;
        an assumption, TE may also keep its transpose), MX/NV formats rowwise + columnwise (2 copies)."""
        if self is Precision.FP8:
            return 1.0
        return 2.0 * self.operand_bytes if self.low_precision else 0.0


_OPERAND_BYTES = {Precision.BF16: 2.0, Precision.FP16: 2.0, Precision.FP8: 1.0,
                  Precision.MXFP8: 1.0 + 1.0 / 32.0, Precision.NVFP4: 0.5 + 1.0 / 16.0}
