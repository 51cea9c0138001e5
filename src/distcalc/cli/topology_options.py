"""The command-line options of a collective's topology and links, derived from the schema
:class:`~distcalc.topology_schema.TopologyFields`: one definition of each, used by every command that offers it
(``collective`` and ``simulate`` all of them, ``analyze`` the link overrides ``--gpus-per-node``,
``--intra-*``, ``--inter-*``).

An option's help is its field's description (unit included), a command's own addition where the option does a
little more there (``collective --size`` also takes a range), and ``[default: …]``: the field's ``default_text``
for a default the topology chooses, or the command's own (``analyze``: the cluster's). The topology commands
write their help as sentences (a final period) and let typer show a fixed default; ``analyze`` puts the links in
its ``cluster`` panel. The option names are the field names with dashes; a field's default is the option's.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from distcalc.topology_schema import TopologyFields


def topology_help(name: str, extra: str = "", default: Optional[str] = None, sentence: bool = True) -> str:
    """Field ``name``'s description, the command's ``extra`` text, ``[default: …]`` (the command's ``default``
    or the field's ``default_text``) and, for a ``sentence``, a final period."""
    field = TopologyFields.model_fields[name]
    schema_extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    default = default or schema_extra.get("default_text")
    text = f"{field.description}{extra}" + (f" [default: {default}]" if default else "")
    return text + "." if sentence else text


def topology_option(name: str, extra: str = "", default: Optional[str] = None, panel: Optional[str] = None,
                    **kwargs: Any) -> Any:
    """The ``typer.Option`` of field ``name`` (``panel``: a rich help panel, which also drops the period;
    ``kwargs`` such as ``min`` pass through)."""
    dashed = "--" + name.replace("_", "-")
    if panel is not None:
        kwargs["rich_help_panel"] = panel
    return typer.Option(dashed, help=topology_help(name, extra, default, sentence=panel is None), **kwargs)


def annotated(name: str, extra: str = "", **kwargs: Any) -> Any:
    """``Annotated[type, typer.Option(...)]`` of field ``name`` (its type as the schema writes it)."""
    return Annotated[TopologyFields.model_fields[name].annotation, topology_option(name, extra, **kwargs)]


TopologyOption = annotated("topology")
GpusOption = annotated("gpus")
BandwidthOption = annotated("bandwidth")
LatencyOption = annotated("latency")
ShapeOption = annotated("shape")
GpusPerNodeOption = annotated("gpus_per_node", "; tree: GPUs per leaf, a divisor of N or a power of two")
IntraBandwidthOption = annotated("intra_bandwidth")
IntraLatencyOption = annotated("intra_latency")
InterBandwidthOption = annotated("inter_bandwidth")
InterLatencyOption = annotated("inter_latency")
InNetworkReductionOption = annotated("in_network_reduction")
OversubscriptionOption = annotated("oversubscription")
JsonTableOption = Annotated[bool, typer.Option("--json", help="Print one JSON object instead of a table.")]


def link_options(panel: str, default: str) -> dict[str, Any]:
    """``analyze``'s link overrides (``--gpus-per-node``, ``--intra-*``, ``--inter-*``) in ``panel``, each with
    the command's ``default`` text (the cluster's): ``{field: Annotated[...]}``."""
    names = ("gpus_per_node", "intra_bandwidth", "intra_latency", "inter_bandwidth", "inter_latency")
    return {name: annotated(name, panel=panel, default=default, show_default=False) for name in names}
