"""The command-line options of the parallel configuration, derived from the schema
:class:`~distcalc.parallel_schema.ParallelFields` (the fields of :class:`~distcalc.parallel.ParallelConfig`).

Each option's help is its field's description (units included) followed by ``[default: …]``: the field's
default, or for a default that depends on other fields the ``derived_default`` text the field carries; its
bounds are the field's ``ge``/``le``. The
option names are the field names with dashes (``--micro-batch``), a flag field is ``--x/--no-x``, and an enum
field offers the enum's spellings. ``analyze`` and ``memory`` take them all with :func:`with_config_options`
(``search`` picks the two it uses), so the help is written once, in the schema. An option left out is
``None``: the configuration's own default.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Callable, Optional

import typer

from distcalc.cli.option_signature import insert_options
from distcalc.parallel_schema import ParallelFields
from distcalc.run_file import DEFAULTS

M, P, B, S = "model", "parallelism", "batch", "schedule"


def default_text(name: str) -> str | None:
    """What field ``name`` defaults to, as the help shows it (``1``, ``off``, ``none``, ``gpus/(tp·pp·cp)``;
    None for an optional value with no default)."""
    field = ParallelFields.model_fields[name]
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    if "derived_default" in extra:
        return str(extra["derived_default"])
    default = field.default
    if default is None:
        return None
    if isinstance(default, bool):
        return "on" if default else "off"
    if isinstance(default, Enum):
        return str(default.value)
    return str(default)


def field_help(name: str, choices: bool = False, default: str | None = None) -> str:
    """Field ``name``'s description, its spellings when ``choices`` (an enum field), and its default (or the
    command's own ``default``): ``tensor-parallel degree (GPUs) [default: 1]``."""
    field = ParallelFields.model_fields[name]
    text = str(field.description)
    enum = next((t for t in (field.annotation, *getattr(field.annotation, "__args__", ()))
                 if isinstance(t, type) and issubclass(t, Enum)), None)
    if choices and enum is not None:
        text += ": " + ", ".join(str(m.value) for m in enum)
    default = default or default_text(name)
    return text if default is None else f"{text} [default: {default}]"


def _bounds(name: str) -> dict[str, int]:
    """``min``/``max`` from the field's ``ge``/``le`` constraints (``zero``: 0–3)."""
    out = {}
    for constraint in ParallelFields.model_fields[name].metadata:
        if hasattr(constraint, "ge"):
            out["min"] = constraint.ge
        if hasattr(constraint, "le"):
            out["max"] = constraint.le
    return out


def config_option(name: str, panel: str, default: str | None = None, **kwargs: Any) -> Any:
    """The ``typer.Option`` of field ``name`` (help from the schema; ``default``: the command's own default
    text where it differs; ``kwargs`` such as ``min``/``max`` or a ``metavar`` pass through)."""
    field = ParallelFields.model_fields[name]
    decls: tuple[str, ...] = ()
    if field.annotation is bool:
        dashed = name.replace("_", "-")
        decls = (f"--{dashed}/--no-{dashed}",)
    kwargs = {**_bounds(name), **kwargs}
    return typer.Option(*decls, rich_help_panel=panel, show_default=False,
                        help=field_help(name, choices="metavar" in kwargs, default=default), **kwargs)


def _value_type(name: str) -> Any:
    """Field ``name``'s type without ``None`` (``int | None`` -> int)."""
    annotation = ParallelFields.model_fields[name].annotation
    args = [t for t in getattr(annotation, "__args__", ()) if t is not type(None)]
    return args[0] if args else annotation


#: Options that keep their field's default when left out (the others are None: the configuration's default,
#: which may depend on other options); ``gpus`` is each command's own (its default is the cluster's node).
_VALUED = ("dtype", "flash_attention", "account_for_embedding_and_loss")
#: Every configuration option: (type, default), in the schema's order; the ``typer.Option`` is
#: :func:`config_option`.
CONFIG_OPTIONS: dict[str, tuple[Any, Any]] = {
    name: ((_value_type(name), field.default) if name in _VALUED else (Optional[_value_type(name)], None))
    for name, field in ParallelFields.model_fields.items() if name != "gpus"}
_PANELS = {"vpp": S, "recompute": S, "micro_batch": B, "global_batch": B, "seq_len": B, "schedule": S,
           "dtype": M, "flash_attention": M, "account_for_embedding_and_loss": S, "first_stage_layers": S,
           "last_stage_layers": S}
_EXTRA: dict[str, dict[str, Any]] = {"schedule": {"metavar": "NAME"}, "first_stage_layers": {"min": 1},
                                     "last_stage_layers": {"min": 1}}


def annotated_option(name: str) -> Any:
    """``Annotated[type, typer.Option(...)]`` of configuration option ``name``."""
    kind = CONFIG_OPTIONS[name][0]
    return Annotated[kind, config_option(name, _PANELS.get(name, P), **_EXTRA.get(name, {}))]


def with_config_options(after: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare every :data:`CONFIG_OPTIONS` option on a command whose function takes them as
    ``**config_options``: they enter its signature (what typer reads) right after parameter ``after``."""
    return insert_options(after, {name: (annotated_option(name), default)
                                  for name, (_, default) in CONFIG_OPTIONS.items()})


FirstStageOption = annotated_option("first_stage_layers")
#: ``--gpus`` of ``analyze`` and ``memory`` (``search`` takes a list of counts).
GpusOption = Annotated[Optional[int], config_option(
    "gpus", P, default=f"{DEFAULTS.gpus} (one node), or tp·pp·cp·dp when dp is given")]
LastStageOption = annotated_option("last_stage_layers")
