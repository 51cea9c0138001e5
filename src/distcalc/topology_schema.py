"""The fields of a collective's topology and links: names, types, units, defaults and descriptions, written once.

:class:`distcalc.jobs.collective.TopologyRequest` (``collective`` and ``simulate`` requests, the web API's too)
takes these fields, and the command line's topology and link options (:mod:`distcalc.cli.topology_options`)
take their help from them, ``analyze`` included for the link overrides it shares (:data:`LINK_FIELDS`; its
request, the web API's too, declares them with :func:`link_override_field`). A field whose default is
None and whose value is then chosen by the topology carries that choice as ``default_text`` (what ``--help``
shows). Imports pydantic only, so ``distcalc analyze --help`` does not pay for the topology models.
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field

#: What the topology options fall back to (``--bandwidth``/``--latency`` for the flat topologies, the
#: ``--intra-*``/``--inter-*`` tiers for hierarchical); ``plot_sweep``: ``collective --plot``'s sizes.
DEFAULTS = {"topology": "switch", "gpus": 8, "size": "1GiB", "bandwidth": "100GB/s", "latency": "5us",
            "intra_bandwidth": "450GB/s", "intra_latency": "1us", "inter_bandwidth": "50GB/s",
            "inter_latency": "5us", "plot_sweep": "1KiB..8GiB"}


def _tier_field(name: str, description: str, tier: str) -> Any:
    """A link option of the hierarchical topology's tiers (also a cluster override): default None, chosen as
    ``450GB/s (hierarchical B1); the cluster's with --cluster``."""
    return Field(None, description=description, json_schema_extra={
        "default_text": f"{DEFAULTS[name]} (hierarchical {tier}); the cluster's with --cluster"})


class TopologyFields(BaseModel):
    """The topology and link fields shared by ``collective`` and ``simulate`` (the link ones by ``analyze``),
    each with its unit and description. ``defer_build``: reading the fields builds no validator."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: str = Field(description="collective, e.g. all-reduce")
    topology: str = Field(DEFAULTS["topology"], description="ring, tree, hierarchical, switch, mesh or torus")
    gpus: int = Field(DEFAULTS["gpus"], description="Number of GPUs (ranks) N")
    size: str = Field(DEFAULTS["size"], description="Size M (NCCL convention), e.g. 1GiB, 256MB")
    bandwidth: Optional[str] = Field(None, description="Per-link per-direction bandwidth B",
                                     json_schema_extra={"default_text": DEFAULTS["bandwidth"]})
    latency: Optional[str] = Field(None, description="Per-step latency α",
                                   json_schema_extra={"default_text": DEFAULTS["latency"]})
    shape: Optional[str] = Field(None, description="Mesh/torus shape, e.g. 8x8 or 4x4x4",
                                 json_schema_extra={"default_text": "most-square 2D"})
    gpus_per_node: Optional[int] = Field(
        None, description="GPUs per node g",
        json_schema_extra={"default_text": "8 on hierarchical; tree: N if N <= 32, else 32 with a partly "
                                           "filled last leaf"})
    intra_bandwidth: Optional[str] = _tier_field("intra_bandwidth", "in-node B per GPU per direction, e.g. 300GB/s",
                                                 "B1")
    intra_latency: Optional[str] = _tier_field("intra_latency", "in-node α per step, e.g. 3us", "α1")
    inter_bandwidth: Optional[str] = _tier_field("inter_bandwidth", "inter-node B per NIC per direction, e.g. "
                                                 "400Gbps", "B2")
    inter_latency: Optional[str] = _tier_field("inter_latency", "inter-node α per step, e.g. 6us", "α2")
    algorithm: str = Field("auto", description="Algorithm name, auto (fastest) or all")
    in_network_reduction: bool = Field(False, description="Switch with in-network reduction (NVLS/SHARP)")
    oversubscription: float = Field(1.0, description="Tree: leaf uplink oversubscription s:1")


#: The link overrides another request shares (``analyze``: a cluster's links, the node size).
LINK_FIELDS = ("gpus_per_node", "intra_bandwidth", "intra_latency", "inter_bandwidth", "inter_latency")


def link_override_field(name: str) -> Any:
    """Link field ``name`` of :class:`TopologyFields` as an override of a cluster: default None (the
    cluster's), the schema's description (unit included) and no topology ``default_text``."""
    if name not in LINK_FIELDS:
        raise KeyError(f"{name!r} is not a link field; valid: {', '.join(LINK_FIELDS)}")
    return Field(None, description=TopologyFields.model_fields[name].description)
