"""``distcalc collective KIND`` and ``distcalc topologies``: options and calls (the costs live in
:mod:`distcalc.collective`, :mod:`distcalc.p2p` and :mod:`distcalc.topology`; the text views in
:mod:`distcalc.render.tables.collective`)."""

from __future__ import annotations

from typing import Any, Optional

import typer

from distcalc.cli.checks import MAX_GPUS, check_float, check_ranges, gpu_rules
from distcalc.cli.topology_options import with_topology_options
from distcalc.cli.common import ClusterOption, GpuOption, JsonOption, console, emit_json, handle_errors, print_link_hardware
from distcalc.collective import Algorithm, CollectiveKind, lower_bound, valid_algorithms
from distcalc.jobs.collective import (
    DEFAULTS, KINDS, CollectiveRequest, collective_payload, parse_collective_kind, records, run_collective,
)
from distcalc.jobs.nccl import is_nccl, nccl_json, run_nccl
from distcalc.p2p import SEND_RECV
from distcalc.errors import ConfigError
from distcalc.outputs import PLOT_SUFFIXES, check_output_path
from distcalc.topology import KINDS as TOPOLOGY_KINDS
from distcalc.topology import Topology, make_topology
from distcalc.units import parse_size_range
from distcalc.render.tables.collective import (print_collective_range, print_collective_single, print_nccl_estimates,
                                             print_topologies, topology_summary)


def _plot(path: str, kind: str, sizes: list, topo: Topology, algorithm: Any, src: int, dst: int) -> None:
    from distcalc.render.plots.collective import plot_time_vs_size

    sweep = sizes if len(sizes) > 1 else parse_size_range(DEFAULTS["plot_sweep"])
    series: dict[str, list] = {}
    for size in sweep:
        chosen = "all" if algorithm == "auto" else algorithm
        for record in records(kind, size, topo, chosen, src, dst):
            series.setdefault(record.algorithm.value, []).append(float(record.time_s))
    bound = None if kind == SEND_RECV else [float(lower_bound(kind, s, topo).time_s) for s in sweep]
    plot_time_vs_size(sweep, series, path, title=f"{kind} on {topology_summary(topo)}", lower_bound_s=bound)


@with_topology_options(after="kind", size="; or a range 1KiB..8GiB (powers of 2)",
                       algorithm="; nccl: NCCL's own choice and time (needs --cluster)")
def collective_command(
    kind: str = typer.Argument(..., help=f"Collective: {', '.join(KINDS)}."),
    src: int = typer.Option(0, "--src", help="send-recv: source rank."),
    dst: int = typer.Option(1, "--dst", help="send-recv: destination rank."),
    json_output: JsonOption = False,
    plot: Optional[str] = typer.Option(None, "--plot", help="Write time vs size per algorithm to FILE.png "
                                       f"(single size: sweep {DEFAULTS['plot_sweep']})."),
    calibration: Optional[str] = typer.Option(None, "--calibration", help="Calibration file from `distcalc "
                                              "calibrate`: replaces α and B with the values fitted for KIND."),
    cluster: ClusterOption = None,
    gpu: GpuOption = None,
    nccl_version: str = typer.Option("2.20.5", "--nccl-version", help="--algorithm nccl: 2.18.5, 2.20.5 or 2.26.2."),
    nccl_algo: Optional[str] = typer.Option(None, "--nccl-algo", help="--algorithm nccl: allowed algorithms "
                                            "as NCCL_ALGO (ring,tree,nvls,nvls-tree,collnet-direct,collnet-chain)."),
    nccl_proto: Optional[str] = typer.Option(None, "--nccl-proto", help="--algorithm nccl: allowed protocols "
                                             "as NCCL_PROTO (LL,LL128,Simple)."),
    collnet: bool = typer.Option(False, "--collnet", help="--algorithm nccl: the fabric has SHARP (CollNet)."),
    **topology: Any,  # --topology, --gpus, --size, links, --algorithm, …: cli.topology_options
) -> None:
    """Cost of one collective (α-β model): time, latency and bandwidth terms, steps, bytes sent per GPU.

    Defaults: --topology switch --gpus 8 --size 1GiB --bandwidth 100GB/s --latency 5us; hierarchical uses
    --intra-bandwidth 450GB/s --intra-latency 1us --inter-bandwidth 50GB/s --inter-latency 5us, 8 GPUs/node.
    """
    kind_name = parse_collective_kind(kind)
    gpus = topology["gpus"]
    check_topology_options(gpus, topology["gpus_per_node"], topology["oversubscription"])
    if kind_name == SEND_RECV:
        check_send_recv(gpus, src, dst)
    elif gpus == 1:
        raise ConfigError(f"{kind_name} needs at least 2 GPUs, got --gpus 1 (one GPU communicates nothing; its "
                          "bandwidths would be undefined)")
    if plot:
        check_output_path(plot, "--plot", PLOT_SUFFIXES)
    request = CollectiveRequest(**{k: v for k, v in {**locals(), **topology}.items()
                                   if k in CollectiveRequest.model_fields})
    print_link_hardware(request, gpus, json_output)
    if is_nccl(request):
        _nccl_command(request, json_output)
        return
    topo = request.build_topology(allow_files=True)
    topo_for_size = None
    if calibration:  # bench/calibration: α and B fitted to measurements of this collective, per size regime
        from distcalc.calibration import calibrated_topology, load_calibration

        fitted = load_calibration(calibration)
        base = topo
        topo_for_size = lambda s: calibrated_topology(base, kind_name, fitted, s)  # noqa: E731
    run = run_collective(request, topo, topo_for_size)
    kind_name, sizes, topo, per_size, bounds = run["kind"], run["sizes"], run["topo"], run["per_size"], run["bounds"]
    if plot:
        _plot(plot, kind_name, sizes, topo, run["choice"], src, dst)
    if json_output:
        payload = collective_payload(run)
        if plot:
            payload["plot"] = plot
        emit_json(dict(payload, calibration=calibration) if calibration else payload)
        return
    if len(sizes) == 1:
        print_collective_single(kind_name, sizes[0], topo, per_size[0][1], bounds[0])
    else:
        print_collective_range(kind_name, topo, per_size, bounds)
    if plot:
        console.print(f"plot written to {plot}")


def check_topology_options(gpus: int, gpus_per_node: Optional[int], oversubscription: float,
                           max_gpus: int = MAX_GPUS) -> None:
    """Up-front ranges of the shared topology options (``max_gpus``: the command's own cap)."""
    check_ranges([("--gpus", gpus, 1, max_gpus), *gpu_rules(gpus_per_node=gpus_per_node)])
    check_float(oversubscription, "--oversubscription", 1.0, float(MAX_GPUS))


def check_send_recv(gpus: int, src: int, dst: int) -> None:
    """send-recv moves data between two different ranks of the N GPUs."""
    if gpus < 2:
        raise ConfigError(f"send-recv needs at least 2 GPUs, got --gpus {gpus}")
    check_ranges([("--src", src, 0, gpus - 1), ("--dst", dst, 0, gpus - 1)])
    if src == dst:
        raise ConfigError(f"send-recv --src {src} --dst {dst}: source and destination must be different ranks "
                          f"in 0..{gpus - 1}")


def _nccl_command(request: CollectiveRequest, json_output: bool) -> None:
    """``--algorithm nccl``: NCCL's own choice (algorithm, protocol, channels) and time on a cluster preset."""
    run = run_nccl(request, allow_files=True)
    if json_output:
        emit_json(nccl_json(run, request.gpus))
    else:
        print_nccl_estimates(run["kind"], run["estimates"], run["cluster"], request.gpus)


def topologies_command(
    gpus: int = typer.Option(64, "--gpus", help="N used to decide which algorithms are valid."),
    gpus_per_node: int = typer.Option(8, "--gpus-per-node", help="g for hierarchical (GPUs per leaf for tree)."),
    json_output: JsonOption = False,
) -> None:
    """List the topologies and the algorithms valid on each, per collective (validity can depend on N)."""
    check_ranges(gpu_rules(gpus=gpus, gpus_per_node=gpus_per_node))
    entries = []
    for kind, traits in TOPOLOGY_KINDS.items():
        extra: dict[str, Any] = {"gpus_per_node": gpus_per_node} if traits.node_option else {}
        if traits.in_network_reduction:
            extra["in_network_reduction"] = True
        topo = make_topology(kind, gpus, **extra)
        algorithms = {c.value: [a.value for a in valid_algorithms(c, topo)] for c in CollectiveKind}
        algorithms[SEND_RECV] = [Algorithm.P2P.value]
        entries.append({"kind": kind.value, "description": traits.description, "algorithms": algorithms})
    if json_output:
        emit_json({"gpus": gpus, "topologies": entries})
        return
    print_topologies(gpus, entries)


def register(app: typer.Typer) -> None:
    """Add ``collective`` and ``topologies`` to the distcalc app."""
    app.command("collective")(handle_errors(collective_command))
    app.command("topologies")(handle_errors(topologies_command))
