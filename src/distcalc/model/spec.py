"""The model specification: a :class:`~distcalc.model.architecture.ModelArchitecture` (fields, checks and
derived sizes) that also answers its parameter counts (:mod:`distcalc.model.params`).

The architecture and the counting are two concepts in two modules: the counts read the architecture's
fields, and this class joins them so that ``spec.parameters`` and ``spec.active_parameters`` read as
properties of the model.
"""

from __future__ import annotations

from pydantic import ConfigDict

from distcalc.model.architecture import GATED_ACTIVATIONS, ModelArchitecture, NormType, PositionEmbedding
from distcalc.model.params import active_parameter_count, parameter_breakdown

__all__ = ["GATED_ACTIVATIONS", "ModelSpec", "NormType", "PositionEmbedding"]


class ModelSpec(ModelArchitecture):
    """A decoder-only transformer (dense or mixture-of-experts) with Hugging Face field names (see
    :class:`~distcalc.model.architecture.ModelArchitecture`), with its parameter counts."""

    model_config = ConfigDict(defer_build=False)  # validator built with the class (the base defers its own)

    # ----------------------------------------------------------------------------------- parameters
    @property
    def parameters(self) -> int:
        """Total parameter count (sum of :meth:`parameter_breakdown`)."""
        return sum(self.parameter_breakdown().values())

    @property
    def active_parameters(self) -> int:
        """Parameters one token uses (MoE: k of the routed experts), for FLOP counts."""
        return active_parameter_count(self)

    def parameter_breakdown(self) -> dict[str, int]:
        """Parameters by component (see :func:`distcalc.model.params.parameter_breakdown`)."""
        return parameter_breakdown(self)
