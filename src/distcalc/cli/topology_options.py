"""The command-line options of a collective's topology and links, derived from the schema
:class:`~distcalc.topology_schema.TopologyFields`: one definition of each, used by every command that offers it
(``collective`` and ``simulate`` all of them, ``analyze`` the link overrides ``--gpus-per-node``,
``--intra-*``, ``--inter-*``).

An option's help is its field's description (unit included), a command's own addition where the option does a
little more there (``collective --size`` also takes a range), and ``[default: …]``: the field's ``default_text``
for a default the topology chooses, or the command's own (``analyze``: the cluster's). The topology commands
write their help as sentences (a final period) and let typer show a fixed default; ``analyze`` puts the links in
its ``cluster`` panel. The option names are the field names with dashes; a field's default is the option's.
``collective`` and ``simulate`` take them all with :func:`with_topology_options` (as ``**topology``),
``analyze`` its links with :func:`with_link_options`.
"""

from __future__ import annotations

from typing import Annotated, Any, Callable, Optional

import typer

from distcalc.cli.option_signature import insert_options
from distcalc.topology_schema import LINK_FIELDS, TopologyFields


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


#: What the topology commands add to a field's help (the tree topology reads --gpus-per-node as GPUs per leaf).
_TOPOLOGY_EXTRA = {"gpus_per_node": "; tree: GPUs per leaf, a divisor of N or a power of two"}


def with_topology_options(after: str, **extra: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare every topology field but ``kind`` as an option of a command whose function takes them as
    ``**topology``, right after its parameter ``after``, each defaulting to its field's default; ``extra``:
    the command's addition to a field's help (``size="; or a range …"``)."""
    texts = {**_TOPOLOGY_EXTRA, **extra}
    return insert_options(after, {name: (annotated(name, texts.get(name, "")), field.default)
                                  for name, field in TopologyFields.model_fields.items() if name != "kind"})


def with_link_options(after: str, panel: str, default: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the link overrides (``--gpus-per-node``, ``--intra-*``, ``--inter-*``) on a command whose function
    takes them in its ``**kwargs`` (``analyze``), right after its parameter ``after``, in ``panel``, each with the
    command's ``default`` text (the cluster's)."""
    return insert_options(after, {name: (annotated(name, panel=panel, default=default, show_default=False), None)
                                  for name in LINK_FIELDS})
