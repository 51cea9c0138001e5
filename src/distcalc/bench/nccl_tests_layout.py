"""Render ``bench collectives`` rows in nccl-tests' column layout (pure text, no I/O).

The layout is nccl-tests' (github.com/NVIDIA/nccl-tests ``src/common.cu``, ≥ 2.13): a ``# Collective test
starting: NAME_perf`` banner, the ``# nThread … nGpus …`` header, one ``#  Rank r Group 0 Pid p on HOST device d
[bus] NAME`` line per rank, the two-group column header and rows ``size count type redop root time algbw busbw
#wrong`` (out-of-place, then in-place; µs and GB/s with GB = 1e9), closed by ``# Avg bus bandwidth``.

What distcalc fills in: it measures one call per trial (``torch.distributed`` collectives are in place), so both
column groups carry the same measured median; ``#wrong`` is ``N/A`` (no data check), ``Pid`` is 0 and the bus id
``0x00`` (not recorded). :func:`distcalc.calibration.nccl_tests.parse_nccl_tests` reads this text back.
"""

from __future__ import annotations

from typing import Any

NAMES = {"all-reduce": "all_reduce", "reduce-scatter": "reduce_scatter", "all-gather": "all_gather",
         "broadcast": "broadcast", "reduce": "reduce", "all-to-all": "alltoall", "send-recv": "sendrecv"}
REDOP = {"all-reduce": "sum", "reduce-scatter": "sum", "reduce": "sum"}
ROOTED = ("broadcast", "reduce")
#: bench dtype → (nccl-tests type name, bytes per element)
DTYPES = {"float32": ("float", 4), "float16": ("half", 2), "bfloat16": ("bfloat16", 2), "float64": ("double", 8)}
HEADER = ("#                                                              out-of-place                       in-place\n"
          "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
          "busbw #wrong\n"
          "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  "
          "(GB/s)")


def _row(row: dict[str, Any], dtype: str, element_bytes: int) -> str:
    size = int(row["size_bytes"])
    count = size // element_bytes
    if row["collective"] in ("reduce-scatter", "all-gather", "all-to-all"):
        count //= max(1, int(row.get("group_size", 1)))  # nccl-tests prints the per-rank count
    redop = REDOP.get(row["collective"], "none")
    root = 0 if row["collective"] in ROOTED else -1
    time_us = row["time_s"] * 1e6
    algbw, busbw = row["algbw_bytes_per_s"] / 1e9, row["busbw_bytes_per_s"] / 1e9
    group = f"{time_us:8.2f} {algbw:7.2f} {busbw:7.2f}    N/A"
    return f"{size:12d}  {count:12d}  {dtype:>8s}  {redop:>6s}  {root:6d}  {group}  {group}"


def nccl_tests_text(payload: dict[str, Any]) -> str:
    """The ``bench collectives`` result ``payload`` as nccl-tests would print it, one run per (collective, tier)."""
    config, hardware = payload.get("config", {}), payload.get("hardware", {})
    dtype, element_bytes = DTYPES.get(str(config.get("dtype", "float32")), ("float", 4))
    host = str(hardware.get("host", "host"))
    device = str(hardware.get("gpu") or hardware.get("cpu") or "cpu")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in payload["results"]:
        groups.setdefault((row["collective"], row.get("tier", "intra")), []).append(row)
    out = []
    for (collective, tier), rows in groups.items():
        ranks = int(rows[0].get("group_size", payload.get("world_size", 1)))
        sizes = [int(r["size_bytes"]) for r in rows]
        out.append(f"# Collective test starting: {NAMES[collective]}_perf   (distcalc bench, tier {tier})")
        out.append(f"# nThread 1 nGpus 1 minBytes {min(sizes)} maxBytes {max(sizes)} step: 2(factor) warmup iters: "
                   f"{config.get('warmup', 5)} iters: {config.get('trials', 20)} agg iters: 1 validation: 0 graph: 0")
        out.append("#\n# Using devices")
        out.extend(f"#  Rank {r:2d} Group  0 Pid      0 on {host:>10s} device {r:2d} [0x00] {device}"
                   for r in range(ranks))
        out.append("#")
        out.append(HEADER)
        out.extend(_row(r, dtype, element_bytes) for r in rows)
        average = sum(r["busbw_bytes_per_s"] for r in rows) / len(rows) / 1e9
        out.append(f"# Out of bounds values : 0 OK\n# Avg bus bandwidth    : {average:.4f} \n#")
    return "\n".join(out) + "\n"
