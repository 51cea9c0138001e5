"""``distcalc simulate KIND``: execute a collective's schedule on simulated ranks (options and calls; the
simulator lives in :mod:`distcalc.simulate`, the text view in :mod:`distcalc.render.tables.simulate`)."""

from __future__ import annotations

from typing import Any, Optional

import typer

from distcalc.cli.checks import check_ranges
from distcalc.cli.collective_cmd import check_topology_options
from distcalc.cli.topology_options import with_topology_options
from distcalc.cli.common import ClusterOption, GpuOption, JsonOption, emit_json, handle_errors, print_link_hardware
from distcalc.jobs.simulate import KINDS, SimulateRequest, run_simulate, simulate_payload
from distcalc.outputs import PLOT_SUFFIXES, check_output_path
from distcalc.simulate.budget import MAX_ELEMENTS, MAX_SIMULATED_GPUS
from distcalc.render.tables.simulate import print_simulation


@with_topology_options(after="kind")
def simulate_command(
    kind: str = typer.Argument(..., help=f"Collective: {', '.join(KINDS)}."),
    segments: Optional[int] = typer.Option(None, "--segments", min=1,
                                           help="Pipeline segments k for pipelined algorithms [default: chosen]."),
    elements: int = typer.Option(1, "--elements", min=1, help="Numbers per chunk in the executed buffers "
                                 "(All-to-All is checked by provenance and holds none)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random rank data."),
    mode: str = typer.Option("step", "--mode", help="Timing: step (synchronous steps: α + busiest link per "
                             "step) or event (chunk transfers as events per link, no step barrier: pipelined "
                             "schedules overlap)."),
    json_output: JsonOption = False,
    plot: Optional[str] = typer.Option(None, "--plot", help="Write FILE.png: link-load heatmap (mesh/torus) or "
                                                            "per-step timeline."),
    cluster: ClusterOption = None,
    gpu: GpuOption = None,
    **topology: Any,  # --topology, --gpus, --size, links, --algorithm, …: cli.topology_options
) -> None:
    """Execute the algorithm on simulated ranks, verify the result, route every transfer over the links and
    compare the simulated time with the analytic formula.

    Defaults as for `distcalc collective` (--topology switch --gpus 8 --size 1GiB --bandwidth 100GB/s
    --latency 5us). Big N: the executed data is --elements numbers per chunk; the timing uses the real size.
    """
    gpus = topology["gpus"]
    check_topology_options(gpus, topology["gpus_per_node"], topology["oversubscription"], MAX_SIMULATED_GPUS)
    check_ranges([("--elements", elements, 1, MAX_ELEMENTS), ("--segments", segments, 1, MAX_ELEMENTS),
                  ("--seed", seed, 0, 2**63 - 1)])
    if plot:
        check_output_path(plot, "--plot", PLOT_SUFFIXES)
    request = SimulateRequest(**{k: v for k, v in {**locals(), **topology}.items()
                                 if k in SimulateRequest.model_fields})
    print_link_hardware(request, gpus, json_output)
    results, every = run_simulate(request, allow_files=True)
    if plot:
        from distcalc.render.plots.simulate import plot_simulation

        plot_simulation(results[0], plot)
    if json_output:
        payload = simulate_payload(results, every)
        if plot:
            payload["plot"] = plot
        emit_json(payload)
        return
    print_simulation(results, plot)


def register(app: typer.Typer) -> None:
    """Add ``simulate`` to the distcalc app."""
    app.command("simulate")(handle_errors(simulate_command))
