"""How the command line looks: one ``error: …`` line for every refusal (usage errors included) and plain
``--help`` text grouped into panels (model / cluster / parallelism / schedule / output).

Plain click help (not rich's boxed table) keeps every option name whole at 80 columns; click wraps the help
text beside it instead.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Sequence

import typer
from typer.core import TyperCommand, TyperGroup

from distcalc.cli.checks import given_value
from distcalc.inputs import excerpt, shorten

# The exceptions of the click that typer runs on (recent typer vendors click; older typer imports it): the
# classes raised are the ones in the module of typer's own BadParameter.
click: Any = importlib.import_module(typer.BadParameter.__module__)

EXIT_USAGE = 2

#: Help panels in the order they are printed; options without a panel go under "other".
PANELS = ("model", "cluster", "parallelism", "batch", "schedule", "memory", "search", "output", "other")


def one_line_error(error: Any, arguments: Sequence[str] = ()) -> str:
    """``error: <message>`` on one line (at most 300 characters), quoting the value given to the option it is
    about (``arguments``: the command line) and naming the command whose ``--help`` lists what is valid."""
    message = " ".join(error.format_message().split())
    given = given_value(list(arguments), getattr(getattr(error, "param", None), "opts", ()))
    if given is not None:
        message += f" (got {excerpt(given)})"
    message = shorten(message, 300)
    context = getattr(error, "ctx", None)
    if isinstance(error, click.UsageError) and context is not None:
        message += f" (see {context.command_path} --help)"
    return f"error: {message[:1].lower()}{message[1:]}"


class DistcalcGroup(TyperGroup):
    """The ``distcalc`` group: click's usage errors become one ``error: …`` line with exit code 2."""

    _arguments: Sequence[str] = ()

    def make_context(self, info_name: Any, args: list[str], *rest: Any, **kwargs: Any) -> Any:  # noqa: D102
        self._arguments = list(args)
        return super().make_context(info_name, args, *rest, **kwargs)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        try:
            result = super().main(args=args, prog_name=prog_name, complete_var=complete_var,
                                  standalone_mode=False, **extra)
        except click.NoArgsIsHelpError as error:  # `distcalc` or a group alone: print its help
            if not standalone_mode:
                raise
            error.show()
            sys.exit(error.exit_code)
        except click.ClickException as error:
            if not standalone_mode:
                raise
            typer.echo(one_line_error(error, self._arguments), err=True)
            sys.exit(error.exit_code)
        except typer.Abort:
            if not standalone_mode:
                raise
            typer.echo("error: aborted", err=True)
            sys.exit(1)
        if not standalone_mode:
            return result
        sys.exit(result if isinstance(result, int) else 0)


class PanelCommand(TyperCommand):
    """A command whose ``--help`` lists its options panel by panel (the option's ``rich_help_panel``)."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        groups: dict[str, list[tuple[str, str]]] = {}
        arguments = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append(record)
                continue
            panel = getattr(param, "rich_help_panel", None) or "other"
            groups.setdefault(panel, []).append(record)
        if arguments:
            with formatter.section("Arguments"):
                formatter.write_dl(arguments)
        order = [p for p in PANELS if p in groups] + [p for p in groups if p not in PANELS]
        for panel in order:
            with formatter.section(panel.capitalize()):
                formatter.write_dl(groups[panel])
