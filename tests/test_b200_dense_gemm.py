"""The dense GEMM model (distcalc.compute.device) on B200 against 514 GEMM efficiencies measured on a DGX B200.

SimuMax timed TransformerEngine's ``general_gemm`` for every layer GEMM of ten model families (BF16, 100 calls
after 25 warm-up; MooreThreads/SimuMax@4dcaae5 ``configs/system/b200_bf16_ceperm.json``): the forward (TN),
the input gradient (NN) and the weight gradient accumulated into ``main_grad`` (NT, fp32 or bf16). These are the
kernels of the SimuMax_B200 development rows on the same machine, so agreement here is a check of the kernel
model, not an independent check of the rows. Errors are ``model efficiency / measured - 1`` (+: model faster).
"""

import csv
import functools
from pathlib import Path

import numpy as np

from distcalc.compute import load_device
from distcalc.compute.device import gemm_time_s

DATA = Path(__file__).parent / "data" / "simumax_b200_dense_gemm.csv"
PEAK_FLOPS_PER_S = 2250e12  # the measurement's reference peak (HGX B200 dense BF16)
LARGE_WORK = 2 ** 38  # multiply-adds: GEMMs of a training layer at 4096 tokens, not the small heads


def _rows():
    with DATA.open() as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _pass(row) -> str:
    if row["accumulate"] == "True":
        return f"wgrad-{row['out_dtype']}"
    return {"TN": "forward", "NN": "dgrad"}[row["layout"]]


@functools.lru_cache(maxsize=1)
def _errors():
    """{pass: [(multiply-adds, model efficiency / measured efficiency - 1, measured time)]} for every row."""
    device = load_device("b200", "bf16")
    out: dict[str, list[tuple[float, float, float]]] = {}
    for row in _rows():
        b, m, n, k = (int(row[c]) for c in ("b", "m", "n", "k"))
        out_bytes = {"wgrad-fp32": 8.0, "wgrad-bf16": 4.0}.get(_pass(row), 2.0)
        model_s = float(gemm_time_s(b, m, n, k, device, out_bytes=out_bytes))
        work = float(b) * m * n * k
        measured_s = 2.0 * work / (float(row["efficiency"]) * PEAK_FLOPS_PER_S)
        out.setdefault(_pass(row), []).append((work, measured_s / model_s - 1.0, measured_s))
    return out


def test_all_measured_shapes_are_read():
    errors = _errors()
    assert sum(len(v) for v in errors.values()) == 514
    assert set(errors) == {"forward", "dgrad", "wgrad-fp32", "wgrad-bf16"}


def test_large_layer_gemms_per_pass():
    """Golden: the GEMMs of ≥ 2^38 multiply-adds (every projection and MLP GEMM of the 70B/405B rows). Forward and
    input gradient within 3 % median and 6 % mean |error|; the fp32-accumulating weight gradient is the pass the
    model prices fastest (median +6.4 % today: its 8 B/element main_grad epilogue is hidden under the power
    limit, which the measurement shows it is not, fully): within 8 %."""
    errors = _errors()
    bounds = {"forward": (0.03, 0.06), "dgrad": (0.03, 0.06), "wgrad-bf16": (0.03, 0.06), "wgrad-fp32": (0.08, 0.08)}
    for name, (median_bound, mean_abs_bound) in bounds.items():
        e = np.array([err for work, err, _ in errors[name] if work >= LARGE_WORK])
        assert len(e) >= 40, name
        assert abs(np.median(e)) < median_bound, (name, np.median(e))
        assert np.abs(e).mean() < mean_abs_bound, (name, np.abs(e).mean())


def test_total_time_of_the_large_gemms():
    """What a step sees: the summed time of all large GEMMs, model against measurement, within 2 %."""
    errors = _errors()
    large = [(err, measured) for rows in errors.values() for work, err, measured in rows if work >= LARGE_WORK]
    measured = sum(t for _, t in large)
    model = sum(t / (1.0 + err) for err, t in large)
    assert abs(model / measured - 1.0) < 0.02, model / measured - 1.0
