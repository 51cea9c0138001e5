"""Model specifications (Hugging Face field names), presets and parameter counts."""

from __future__ import annotations

from distcalc.model.architecture import NormType, PositionEmbedding
from distcalc.model.loader import list_models, load_model, model_from_mapping
from distcalc.model.params import LayerParameters, layer_parameters, parameter_breakdown
from distcalc.model.spec import ModelSpec

__all__ = [
    "LayerParameters",
    "ModelSpec",
    "NormType",
    "PositionEmbedding",
    "layer_parameters",
    "list_models",
    "load_model",
    "model_from_mapping",
    "parameter_breakdown",
]
