"""Text view of ``distcalc calibrate``: per fit, the measured and fitted time per size with the residual and the
measured spread; the GEMM model's fitted efficiencies; the held-out check; the file written."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from distcalc.render.console import console
from distcalc.units import format_rate, format_size, format_time


def print_calibration(payload: dict[str, Any]) -> None:
    """Every fit's residual table, the GEMM model line, the held-out check and the file written."""
    for fit in payload["fits"]:
        table = Table(title=(f"{fit['collective']} ({fit['tier']}, N={fit['group_size']}, {fit['algorithm']}): "
                             f"α = {format_time(fit['latency_s'])}, B = {format_rate(fit['bandwidth_bytes_per_s'])}, "
                             f"RMS error {fit['rms_relative_error']:.1%}"), caption=fit["decision"])
        for column in ("size", "measured", "fit", "residual", "spread (p99)"):
            table.add_column(column, justify="right")
        for r in fit["residuals"]:
            table.add_row(format_size(r["size_bytes"]), format_time(r["measured_s"]), format_time(r["predicted_s"]),
                          f"{r['relative_error']:+.1%}", f"{r['relative_spread']:.1%}")
        console.print(table)
    if payload.get("compute"):
        c = payload["compute"]
        p = c["parameters"]
        console.print(f"GEMM model ({c['device']}): η_core = {p['gemm_core_efficiency']:.3f}, "
                      f"η_mem = {p['memory_efficiency']:.3f}, t0 = {format_time(p['kernel_overhead_s'])}, "
                      f"RMS error {c['rms_relative_error']:.1%}")
    for block in payload.get("holdout", []):
        within = sum(p["within"] for p in block["points"])
        console.print(f"held-out {block['collective']} ({block['tier']}): {within}/{len(block['points'])} odd sizes "
                      "within max(own spread, 25%): " + ", ".join(f"{p['relative_error']:+.0%}" for p in block["points"]))
    if payload["calibration_file"]:
        console.print(f"wrote {payload['calibration_file']}")
