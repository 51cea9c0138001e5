"""Text view of ``distcalc simulate``: one row per algorithm executed on the simulated ranks (verified or not,
simulated vs analytic time and steps, bytes sent, the busiest link), and the failures' messages."""

from __future__ import annotations

from typing import Optional

from rich.table import Table

from distcalc.render.console import console
from distcalc.render.tables.collective import topology_summary
from distcalc.simulate import SimulationResult, node_name
from distcalc.units import format_size, format_time


def print_simulation(results: list[SimulationResult], plot: Optional[str]) -> None:
    """One row per simulated algorithm, the column legend, failures' messages and where the figure went."""
    first = results[0]
    table = Table(title=f"simulated {first.collective} of {format_size(first.size_bytes)} on "
                        f"{topology_summary(first.topology)} ({first.timing.mode.value} timing)")
    for column in ("algorithm", "ok", "simulated", "analytic", "sim/ana", "steps", "sent/GPU", "busiest link",
                   "its bytes"):
        table.add_column(column, justify="left" if column in ("algorithm", "busiest link") else "right")
    for r in results:
        a = r.analytic
        ratio = r.time_s / a.time_s if a.time_s else 1.0
        link = r.busiest_link
        where = "-" if link is None else f"{node_name(link.src)}→{node_name(link.dst)}"
        link_bytes = 0.0 if link is None else float(r.timing.link_bytes[r.timing.links.index(link)])
        table.add_row(r.algorithm, "[green]yes[/green]" if r.verified else "[red]NO[/red]", format_time(r.time_s),
                      format_time(float(a.time_s)), f"{ratio:.4f}", f"{r.steps}/{int(a.steps)}",
                      format_size(r.bytes_sent_per_gpu), where, format_size(link_bytes))
    console.print(table)
    console.print("steps: simulated/analytic; sim/ana = simulated time / analytic time; busiest link = the link "
                  "busy longest (bytes / bandwidth)")
    for r in results:
        if r.spec is not None:
            what = (f"at the schedule's k = {r.schedule.notes['segments']} segments; the k → ∞"
                    if "segments" in r.schedule.notes else
                    f"with its {r.schedule.notes['ring_channels']} rings as independent channels;"
                    if "ring_channels" in r.schedule.notes else "without phase barriers; the phase-synchronous")
            console.print(f"{r.algorithm}: analytic = {r.analytic.formula_id} {what} {r.spec.formula_id} gives "
                          f"{format_time(float(r.spec.time_s))}")
    for r in results:
        if not r.verified:
            console.print(f"[red]{r.execution.message}[/red]")
    if plot:
        console.print(f"plot written to {plot}")
