"""The ``distcalc`` command line (typer). Each command lives in its own module with a ``register(app)``.

Commands are loaded lazily: ``distcalc --help`` lists them from :data:`COMMANDS` without importing any
command module, and ``distcalc NAME`` imports only the module that registers ``NAME`` (click's "lazily
loading subcommands" pattern), so start-up does not pay for every cost model.
"""

from __future__ import annotations

import importlib
import sys
from functools import lru_cache
from typing import Any

from distcalc.cli.startup import collection_paused, command_line_process

with collection_paused():  # the imports of the command line (startup's docstring)
    import typer

    from distcalc.cli.coercion import defer_coercion
    from distcalc.cli.style import DistcalcGroup

# Command → (module of distcalc.cli that registers it, one-line summary for the command list), in --help order.
COMMANDS: dict[str, tuple[str, str]] = {
    "collective": ("collective_cmd", "Cost of one collective (α-β model or NCCL's): time, latency and bandwidth terms."),
    "topologies": ("collective_cmd", "List the topologies and the algorithms valid on each."),
    "simulate": ("simulate_cmd", "Execute the algorithm on simulated ranks, verify the result, time it per link."),
    "memory": ("memory_cmd", "Per-GPU memory (weights, gradients, optimizer, activations, buffers) per stage."),
    "analyze": ("analyze_cmd", "Predict the training step time, MFU and HFU, and show where the time goes."),
    "search": ("search_cmd", "Search the parallel configurations for the fastest ones that fit."),
    "calibrate": ("calibrate_cmd", "Fit α and B (and the GEMM efficiency) to bench results or nccl-tests logs."),
    "validate": ("validate_cmd", "Compare predictions with published measurements and formulas."),
    "presets": ("presets_cmd", "List the model, GPU, cluster and link presets with their key numbers."),
    "serve": ("serve_cmd", "Serve the calculator page and its JSON API on this machine."),
    "bench": ("bench_cmd", "Measure real collectives, GEMMs and training steps with torch.distributed."),
}


@lru_cache(maxsize=None)
def _module_commands(module: str) -> dict[str, Any]:
    """The click commands ``distcalc.cli.<module>`` registers (imported on first use)."""
    sub = typer.Typer(pretty_exceptions_enable=False, rich_markup_mode=None, add_completion=False)
    with collection_paused():
        importlib.import_module(f"distcalc.cli.{module}").register(sub)
    return dict(typer.main.get_group(sub).commands)


class LazyGroup(DistcalcGroup):
    """The ``distcalc`` group: commands come from :data:`COMMANDS`, imported when first asked for; their
    options (and the group's) convert only the values that need it (:mod:`distcalc.cli.coercion`)."""

    def list_commands(self, ctx: Any) -> list[str]:  # noqa: D102
        return list(COMMANDS)

    def parse_args(self, ctx: Any, args: list[str]) -> Any:  # noqa: D102
        defer_coercion(self.get_params(ctx))
        return super().parse_args(ctx, args)

    def get_command(self, ctx: Any, name: str) -> Any:  # noqa: D102
        entry = COMMANDS.get(name)
        command = _module_commands(entry[0]).get(name) if entry else None
        if command is not None:  # its --help option too, which exists once there is a context
            defer_coercion(command.params if ctx is None else command.get_params(ctx))
        return command

    def format_commands(self, ctx: Any, formatter: Any) -> None:  # noqa: D102
        with formatter.section("Commands"):
            formatter.write_dl([(name, summary) for name, (_, summary) in COMMANDS.items()])


app = typer.Typer(
    cls=LazyGroup,
    name="distcalc",
    help="Communication, memory and step-time calculator for distributed LLM training.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # plain help: option names stay whole at 80 columns
)


@app.callback()
def _distcalc() -> None:
    """Communication, memory and step-time calculator for distributed LLM training."""


def main() -> None:
    """Console-script entry point. What the command line imported so far is frozen out of the garbage
    collector's walks (:func:`distcalc.cli.startup.command_line_process`): the process ends with the command."""
    command_line_process()
    sys.exit(app())
