"""Read nccl-tests' standard output (``all_reduce_perf`` & co.) and fit α and B per protocol regime.

The format (github.com/NVIDIA/nccl-tests ``src/common.cu``): a run starts with ``# nThread … nGpus …``, lists
its devices as ``#  Rank  r Group g Pid p on HOST device d [bus] NAME`` (older releases omit ``Group``), then a
table whose rows are ``size count type [redop] [root] time algbw busbw #wrong time algbw busbw #wrong`` —
out-of-place then in-place, times in µs, bandwidths in GB/s (1e9). A file may hold any number of runs (several
tests, or the same test twice); lines that are not table rows (MPI warnings, "Avg bus bandwidth") are skipped.
The collective comes from ``# Collective test starting: NAME`` (nccl-tests ≥ 2.13) or from the command line
echoed above the run (``…/all_reduce_perf …``), else from the busbw/algbw ratio and the reduction column.

Fit: per (collective, ranks, nodes) the two columns' mean time per size is fitted with ``t = a + c·M`` in
consecutive size ranges — NCCL switches protocol with size (LL → LL128 → Simple, ``src/graph/tuning.cc``) and
runs fewer channels below ``channels × threads × threshold`` bytes (``src/enqueue.cc`` getAlgoInfo), so a sweep
shows several regimes. For each number of ranges (1 … :data:`MAX_REGIMES`, each ≥ 3 sizes) the edges with the
least squared relative error are found exactly (dynamic programming); the number kept is the one with the lowest
small-sample Akaike criterion AICc (Hurvich & Tsai, Biometrika 76(2), 1989), counting three parameters per range
(intercept, slope, edge) less one, so a range is added only where it pays for its parameters. The
spread of a size is the relative difference of its out-of-place and in-place times. α and B follow
:mod:`.collectives` (α = a / steps, B = φ / c of NCCL's ring).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from distcalc.calibration.collectives import BACKEND_ALGORITHMS, CollectiveFit, _segment_record, model_coefficients
from distcalc.calibration.fit import MIN_SEGMENT_POINTS, Segment, _weighted_cost, fit_line, predict
from distcalc.errors import ConfigError

#: nccl-tests binary → distcalc collective name.
TESTS = {"all_reduce": "all-reduce", "all_gather": "all-gather", "reduce_scatter": "reduce-scatter",
         "broadcast": "broadcast", "reduce": "reduce", "alltoall": "all-to-all", "gather": "gather",
         "scatter": "scatter", "sendrecv": "send-recv"}
_DEVICE = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s+(.*)$")
_TEST_NAME = re.compile(r"([a-z_]+)_perf")
_GPUS_PER_THREAD = re.compile(r"\bnGpus\s+(\d+)")
#: The most ranges tried: NCCL's three protocols, each of which can also run channel-limited (fewer channels
#: below ``channels × threads × threshold`` bytes, ``src/enqueue.cc`` getAlgoInfo) — AICc picks how many are used.
MAX_REGIMES = 6
#: nccl-tests prints times to about four significant digits (``src/common.cu``: ``%7.2f`` µs below 100 µs,
#: ``%7.1f`` below 10 ms, ``%7.0f`` above): relative differences below 1e-4 are not in the data.
PRINTED_RELATIVE_RESOLUTION = 1e-4


@dataclass(frozen=True)
class NcclTestsRow:
    """One table row: out-of-place and in-place time (s), algbw and busbw (bytes/s)."""

    collective: str
    size_bytes: float
    dtype: str
    redop: str
    time_oop_s: float
    algbw_oop: float
    busbw_oop: float
    time_ip_s: float
    algbw_ip: float
    busbw_ip: float


@dataclass
class NcclTestsRun:
    """One run: its collective, ranks, hosts and rows."""

    collective: str
    ranks: int
    hosts: tuple[str, ...]
    gpu: str
    rows: list[NcclTestsRow]
    gpus_per_thread: int = 1  #: the header's ``nGpus`` (``-g``): GPUs one host thread drives

    @property
    def nodes(self) -> int:
        return max(1, len(self.hosts))


def is_nccl_tests_output(path: str | Path) -> bool:
    """True when the file looks like nccl-tests stdout (a ``# nThread`` header or its column header)."""
    try:
        head = Path(path).read_text(errors="replace")[:200_000]
    except OSError:
        return False
    return "# nThread" in head or ("out-of-place" in head and "busbw" in head)


def _floats(tokens: list[str]) -> list[float] | None:
    try:
        return [float(t) for t in tokens]
    except ValueError:
        return None


def _row(tokens: list[str], collective: str) -> NcclTestsRow | None:
    if len(tokens) < 11 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    tail = tokens[-8:]
    values = _floats([tail[0], tail[1], tail[2], tail[4], tail[5], tail[6]])
    if values is None:
        return None
    t1, a1, b1, t2, a2, b2 = values
    middle = tokens[2:-8]
    redop = middle[1] if len(middle) > 1 else "none"
    return NcclTestsRow(collective, float(tokens[0]), middle[0] if middle else "", redop, t1 * 1e-6, a1 * 1e9,
                        b1 * 1e9, t2 * 1e-6, a2 * 1e9, b2 * 1e9)


def _infer_collective(rows: list[NcclTestsRow], ranks: int) -> str:
    """From busbw/algbw (2(n−1)/n: all-reduce; (n−1)/n: gather-like; 1: rooted) and the reduction column."""
    usable = [r for r in rows if r.algbw_oop > 0 and r.busbw_oop > 0]
    if not usable or ranks < 2:
        raise ConfigError("cannot tell which collective this nccl-tests table measured: add the command line or "
                          "'# Collective test starting: NAME' above it")
    ratio = float(np.median([r.busbw_oop / r.algbw_oop for r in usable[-5:]]))
    reduces = usable[-1].redop not in ("none", "-1", "")
    if abs(ratio - 2 * (ranks - 1) / ranks) < 0.05:
        return "all-reduce"
    if abs(ratio - (ranks - 1) / ranks) < 0.05:
        return "reduce-scatter" if reduces else "all-gather"
    return "reduce" if reduces else "broadcast"


def parse_nccl_tests(text: str) -> list[NcclTestsRun]:
    """Every run in ``text`` (module docstring); :class:`ConfigError` when there is none."""
    runs: list[NcclTestsRun] = []
    pending_name: str | None = None
    current: dict | None = None

    def close() -> None:
        if current and current["rows"]:
            ranks = len(current["devices"]) or 1
            name = current["name"] or _infer_collective(current["rows"], ranks)
            rows = [dataclasses.replace(r, collective=name) for r in current["rows"]]
            hosts = tuple(dict.fromkeys(h for h, _ in current["devices"].values()))
            gpus = {g for _, g in current["devices"].values()}
            runs.append(NcclTestsRun(name, ranks, hosts, ", ".join(sorted(gpus)), rows, current["gpus_per_thread"]))

    for raw in text.splitlines():
        line = raw.strip()
        if "Collective test starting:" in line or ("_perf" in line and not line.startswith("#")):
            match = _TEST_NAME.search(line)
            if match and match.group(1) in TESTS:
                pending_name = TESTS[match.group(1)]
            continue
        if line.startswith("# nThread"):
            close()
            per_thread = _GPUS_PER_THREAD.search(line)
            current = {"name": pending_name, "devices": {}, "rows": [],
                       "gpus_per_thread": int(per_thread.group(1)) if per_thread else 1}
            pending_name = None
            continue
        if current is None:
            continue
        device = _DEVICE.match(line)
        if device:
            current["devices"][int(device.group(1))] = (device.group(2), device.group(3).strip())
            continue
        if not line.startswith("#"):
            row = _row(line.split(), current["name"] or "")
            if row is not None:
                current["rows"].append(row)
    close()
    if not runs:
        raise ConfigError("no nccl-tests result table found (expected '# nThread' headers followed by rows of "
                          "'size count type redop root time algbw busbw #wrong time algbw busbw #wrong')")
    return runs


def fit_regimes(sizes: np.ndarray, times: np.ndarray) -> tuple[list[Segment], str]:
    """Consecutive ``a + c·M`` ranges, as many as AICc picks (module docstring); returns segments and why."""
    order = np.argsort(sizes)
    sizes, times = np.asarray(sizes, float)[order], np.asarray(times, float)[order]
    n = sizes.size
    best_bounds = _best_partitions(sizes, times)
    scored = []
    for regimes, (cost, bounds) in sorted(best_bounds.items()):
        score = aicc(cost, n, 3 * regimes - 1)
        if math.isfinite(score):
            scored.append((score, regimes, cost, bounds))
    if not scored:  # too few sizes for AICc's small-sample term: one line
        bounds = [0, n]
        reasons = f"1 regime: {n} sizes are too few to compare regime counts"
    else:
        _, chosen, _, bounds = min(scored)
        reasons = "; ".join(f"{k} regime{'s' * (k > 1)}: squared relative error {c:.3g}, AICc {a:.1f}"
                            for a, k, c, _ in scored) + f" → {chosen}"
    segments = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        a, c = fit_line(sizes[lo:hi], times[lo:hi])
        low = 0.0 if lo == 0 else math.sqrt(sizes[lo - 1] * sizes[lo])
        high = math.inf if hi == sizes.size else math.sqrt(sizes[hi - 1] * sizes[hi])
        segments.append(Segment(a, c, low, high))
    return segments, reasons


def aicc(cost: float, points: int, parameters: int) -> float:
    """Akaike's criterion with the small-sample correction (Hurvich & Tsai 1989) for a least-squares fit whose
    residual sum of squares is ``cost``: ``n·ln(RSS/n) + 2p + 2p(p+1)/(n−p−1)``; inf where ``n ≤ p + 1``.
    Residuals below the printed precision (:data:`PRINTED_RELATIVE_RESOLUTION`) count as that precision, so an
    exact fit is not "improved" by rounding noise."""
    if points <= parameters + 1:
        return math.inf
    rss = max(cost, points * PRINTED_RELATIVE_RESOLUTION ** 2)
    return points * math.log(rss / points) + 2 * parameters + 2 * parameters * (parameters + 1) / (
        points - parameters - 1)


def _best_partitions(sizes: np.ndarray, times: np.ndarray) -> dict[int, tuple[float, list[int]]]:
    """For 1 … :data:`MAX_REGIMES` ranges (each ≥ :data:`MIN_SEGMENT_POINTS` sizes): the least squared relative
    error and its edges, exactly, by dynamic programming over the range ends."""
    n = sizes.size
    cost = {(lo, hi): _cost(sizes, times, [lo, hi])
            for lo in range(n) for hi in range(lo + MIN_SEGMENT_POINTS, n + 1)}
    table: dict[tuple[int, int], tuple[float, list[int]]] = {(0, 0): (0.0, [0])}
    out = {}
    for regimes in range(1, MAX_REGIMES + 1):
        for hi in range(MIN_SEGMENT_POINTS, n + 1):
            options = [(table[(regimes - 1, lo)][0] + cost[(lo, hi)], table[(regimes - 1, lo)][1] + [hi])
                       for lo in range(hi - MIN_SEGMENT_POINTS + 1) if (regimes - 1, lo) in table]
            if options:
                table[(regimes, hi)] = min(options, key=lambda o: o[0])
        if (regimes, n) not in table:
            break
        out[regimes] = table[(regimes, n)]
    return out


def _cost(sizes: np.ndarray, times: np.ndarray, bounds: list[int]) -> float:
    total = 0.0
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        a, c = fit_line(sizes[lo:hi], times[lo:hi])
        total += _weighted_cost(sizes[lo:hi], times[lo:hi], a, c)
    return total


def fit_run(run: NcclTestsRun) -> CollectiveFit:
    """α and B per regime of one run, in the model's terms (NCCL's ring on an N-GPU switch)."""
    rows = sorted((r for r in run.rows if r.size_bytes > 0), key=lambda r: r.size_bytes)
    if len(rows) < 2:
        raise ConfigError(f"the {run.collective} run has {len(rows)} non-empty sizes; a fit needs at least 2")
    sizes = np.array([r.size_bytes for r in rows])
    times = np.array([(r.time_oop_s + r.time_ip_s) / 2 for r in rows])
    spread = np.array([abs(r.time_oop_s - r.time_ip_s) / 2 / t for r, t in zip(rows, times)])
    algorithm = BACKEND_ALGORITHMS["nccl"][run.collective]
    steps, factor = model_coefficients(run.collective, run.ranks, algorithm)
    segments, decision = fit_regimes(sizes, times)
    fitted = predict(segments, sizes)
    errors = (fitted - times) / times
    residuals = [{"size_bytes": float(s), "measured_s": float(t), "predicted_s": float(p), "relative_error": float(e),
                  "relative_spread": float(d)} for s, t, p, e, d in zip(sizes, times, fitted, errors, spread)]
    tier = "intra" if run.nodes == 1 else "inter"
    return CollectiveFit(run.collective, tier, run.ranks, algorithm, steps, factor,
                         [_segment_record(s, steps, factor) for s in segments], residuals,
                         float(np.sqrt(np.mean(errors ** 2))), decision)


def busbw_geomean_error(fit: CollectiveFit) -> float:
    """exp(mean log(1 + |busbw error|)) − 1 of the fit on its own sizes (busbw ∝ 1/time)."""
    logs = [math.log1p(abs(r["measured_s"] / r["predicted_s"] - 1)) for r in fit.residuals]
    return math.expm1(sum(logs) / len(logs))
