"""``distcalc simulate KIND``: execute a collective's schedule on simulated ranks (options and calls; the
simulator lives in :mod:`distcalc.simulate`, the text view in :mod:`distcalc.render.tables.simulate`)."""

from __future__ import annotations

from typing import Optional

import typer

from distcalc.cli.checks import check_ranges
from distcalc.cli.collective_cmd import check_topology_options
from distcalc.cli.common import ClusterOption, GpuOption, emit_json, handle_errors, print_link_hardware
from distcalc.jobs.collective import DEFAULTS
from distcalc.jobs.simulate import KINDS, SimulateRequest, run_simulate, simulate_payload
from distcalc.outputs import PLOT_SUFFIXES, check_output_path
from distcalc.simulate.budget import MAX_ELEMENTS, MAX_SIMULATED_GPUS
from distcalc.render.tables.simulate import print_simulation


def simulate_command(
    kind: str = typer.Argument(..., help=f"Collective: {', '.join(KINDS)}."),
    topology: str = typer.Option(DEFAULTS["topology"], "--topology",
                                 help="ring, tree, hierarchical, switch, mesh or torus."),
    gpus: int = typer.Option(DEFAULTS["gpus"], "--gpus", help="Number of GPUs (ranks) N."),
    size: str = typer.Option(DEFAULTS["size"], "--size", help="Size M (NCCL convention), e.g. 1MiB, 256MB."),
    bandwidth: Optional[str] = typer.Option(None, "--bandwidth",
                                            help="Per-link per-direction bandwidth B [default: 100GB/s]."),
    latency: Optional[str] = typer.Option(None, "--latency", help="Per-step latency α [default: 5us]."),
    shape: Optional[str] = typer.Option(None, "--shape", help="Mesh/torus shape, e.g. 8x8 or 4x4x4."),
    gpus_per_node: Optional[int] = typer.Option(None, "--gpus-per-node",
                                                help="Hierarchical: GPUs per node g [default: 8]; tree: per leaf."),
    intra_bandwidth: Optional[str] = typer.Option(None, "--intra-bandwidth", help="Hierarchical B1 [450GB/s]."),
    intra_latency: Optional[str] = typer.Option(None, "--intra-latency", help="Hierarchical α1 [1us]."),
    inter_bandwidth: Optional[str] = typer.Option(None, "--inter-bandwidth", help="Hierarchical B2 [50GB/s]."),
    inter_latency: Optional[str] = typer.Option(None, "--inter-latency", help="Hierarchical α2 [5us]."),
    algorithm: str = typer.Option("auto", "--algorithm",
                                  help="Algorithm name, auto (the analytic model's fastest) or all."),
    in_network_reduction: bool = typer.Option(False, "--in-network-reduction",
                                              help="Switch with in-network reduction (NVLS/SHARP)."),
    oversubscription: float = typer.Option(1.0, "--oversubscription", help="Tree: leaf uplink oversubscription s:1."),
    segments: Optional[int] = typer.Option(None, "--segments", min=1,
                                           help="Pipeline segments k for pipelined algorithms [default: chosen]."),
    elements: int = typer.Option(1, "--elements", min=1, help="Numbers per chunk in the executed buffers "
                                 "(All-to-All is checked by provenance and holds none)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the random rank data."),
    mode: str = typer.Option("step", "--mode", help="Timing: step (synchronous steps: α + busiest link per "
                             "step) or event (chunk transfers as events per link, no step barrier: pipelined "
                             "schedules overlap)."),
    json_output: bool = typer.Option(False, "--json", help="Print one JSON object instead of a table."),
    plot: Optional[str] = typer.Option(None, "--plot", help="Write FILE.png: link-load heatmap (mesh/torus) or "
                                                            "per-step timeline."),
    cluster: ClusterOption = None,
    gpu: GpuOption = None,
) -> None:
    """Execute the algorithm on simulated ranks, verify the result, route every transfer over the links and
    compare the simulated time with the analytic formula.

    Defaults as for `distcalc collective` (--topology switch --gpus 8 --size 1GiB --bandwidth 100GB/s
    --latency 5us). Big N: the executed data is --elements numbers per chunk; the timing uses the real size.
    """
    check_topology_options(gpus, gpus_per_node, oversubscription, MAX_SIMULATED_GPUS)
    check_ranges([("--elements", elements, 1, MAX_ELEMENTS), ("--segments", segments, 1, MAX_ELEMENTS),
                  ("--seed", seed, 0, 2**63 - 1)])
    if plot:
        check_output_path(plot, "--plot", PLOT_SUFFIXES)
    request = SimulateRequest(**{k: v for k, v in locals().items() if k in SimulateRequest.model_fields})
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
