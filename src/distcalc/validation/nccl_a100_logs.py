"""Further published nccl-tests all-reduce logs of one 8× A100-SXM4-80GB NVSwitch node vs distcalc's NCCL model.

Two logs kept as printed in ``data/validation/`` (sources in its README and in REFERENCES.md):

* ``nccl_tests_a100_8gpu_all_reduce_nccl2193_g8.log``: ``all_reduce_perf -b 8 -e 128M -f 2 -g 8`` on host ``dkh``
  (one thread drives the 8 GPUs), nccl-tests 2.19.4 built and run against NCCL 2.19.3 (``nccl-library=21903``),
  1 warm-up and 20 timed iterations, 8 B–128 MiB;
* ``nccl_tests_a100_8gpu_all_reduce_nccl2162_np8.log``: one process per GPU (``nGpus 1``, eight ranks on one
  host), NCCL 2.16.2, 32 MiB–1 GiB.

Both are priced on ``dgx-a100`` with NCCL 2.18.5's model, as nccl-tests times them with the run's ``-g``
(:func:`~distcalc.collective.nccl_launch.nccl_tests_period_s`). 2.18.5 stands for both releases because what
decides an AllReduce on one 8× A100 node is the same in the three (github.com/NVIDIA/nccl tags v2.16.2-1,
v2.18.5-1, v2.19.3-1): ``all_reduce.h`` ``runRing`` rounds a partial loop's chunk to the protocol grain in all
three (:mod:`distcalc.collective.nccl_ring`; 2.20 replaced it with an even split); ``tuning.cc`` has the same
Ring and Tree LL/LL128 entries, Ring/Simple ``baseLat`` 8.4 µs and NVLink ``hwLat`` 3.4 µs in all three; 2.19.3
differs from 2.18.5 only in Tree/Simple (``hwLat`` 28 µs, never NCCL's pick here), NVLS and CollNet (absent on
A100); 2.16.2 has lower Ring LL/LL128 latencies (``baseLat`` 3.6/10 µs), which do not change NCCL's pick (Ring/Simple)
at the 32 MiB–1 GiB that log covers. The measured busbw is the mean of the out-of-place and in-place times.
"""

from __future__ import annotations

from importlib import resources

from distcalc.calibration.nccl_tests import NcclTestsRun, parse_nccl_tests
from distcalc.cluster import load_cluster
from distcalc.collective.nccl_cluster import nccl_system
from distcalc.collective.nccl_constants import NcclVersion
from distcalc.validation.base import CaseSet, ValidationCase
from distcalc.validation.nccl_busbw import calibrate_case, priced_run_rows

#: (file, series label, NCCL release printed by the log).
LOGS = (("nccl_tests_a100_8gpu_all_reduce_nccl2193_g8.log", "dkh NCCL 2.19.3 -g 8", "2.19.3"),
        ("nccl_tests_a100_8gpu_all_reduce_nccl2162_np8.log", "NCCL 2.16.2 one process per GPU", "2.16.2"))
#: The modelled release whose A100 one-node AllReduce equals these releases' (module docstring).
PRICED_WITH = NcclVersion.V2_18_5
CLUSTER = "dgx-a100"
SOURCE = ("published nccl-tests logs of one 8x A100-SXM4-80GB node (data/validation/README.md): host 'dkh' "
          "NCCL 2.19.3 -g 8; NCCL 2.16.2 one process per GPU, the check_nccl test fixture of Meta's gcm "
          "(theap06/gcm@54e1b1d gcm/tests/health_checks_tests/test_check_nccl.py)")
TOLERANCE = 0.10


def _runs() -> list[tuple[str, str, NcclTestsRun]]:
    """(series label, printed NCCL release, run) of every shipped log."""
    out = []
    for name, label, printed in LOGS:
        text = (resources.files("distcalc") / "data" / "validation" / name).read_text(encoding="utf-8")
        out += [(label, printed, run) for run in parse_nccl_tests(text)]
    return out


def a100_log_rows() -> list[dict[str, object]]:
    """One record per size of each log: NCCL's algorithm/protocol/channels, predicted and measured busbw."""
    system = nccl_system(load_cluster(CLUSTER), 8)
    out = []
    for label, printed, run in _runs():
        out += priced_run_rows(system, label, run, PRICED_WITH, printed)
    return out


def _cases() -> list[ValidationCase]:
    return [ValidationCase(
        case=f"A100 {r['vm']} all-reduce {r['label']} B busbw", predicted=float(r["predicted_GBps"]),
        published=float(r["measured_GBps"]), unit="GB/s", error_kind="relative", tolerance=TOLERANCE,
        kind="measured", note=f"NCCL {r['algorithm']}/{r['protocol']}, {r['channels']} channels "
                              f"(priced with {PRICED_WITH.value})")
        for r in a100_log_rows()]


def _calibrate_cases() -> list[ValidationCase]:
    """``calibrate``'s fit of each log against that log (the issue's bar: busbw within 5 % geomean)."""
    return [calibrate_case(label, run) for label, _, run in _runs()]


CASE_SETS = (
    CaseSet("nccl-a100-logs", "NCCL all-reduce busbw, one 8x A100 node, further published nccl-tests logs "
            "(NCCL 2.19.3 -g 8; NCCL 2.16.2 one process per GPU), NCCL tuning model", SOURCE, _cases),
    CaseSet("calibrate-nccl-a100-logs", "calibrate's fit (alpha, B per protocol regime) reproducing the busbw of "
            "each further published 8x A100 nccl-tests log it was fitted to", SOURCE, _calibrate_cases),
)
