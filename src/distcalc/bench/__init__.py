"""Measure real collectives, GEMMs and training steps with ``torch.distributed``.

Modules (one concept each):

- :mod:`distcalc.bench.launcher`    spawn N local ranks (or join a ``torchrun`` job), watch them, end the run
  cleanly when a rank dies or hangs;
- :mod:`distcalc.bench.worker`      the per-rank entry point the launcher starts;
- :mod:`distcalc.bench.rank`        what a task knows about its rank (:class:`RankContext`), built by the worker;
- :mod:`distcalc.bench.collectives` the nccl-tests style sweep (warm-up, trials, median/p99, algbw/busbw);
- :mod:`distcalc.bench.counting`    a wrapper around ``torch.distributed`` that counts calls and bytes (NCCL M);
- :mod:`distcalc.bench.training`    small DP / TP / PP training steps built on that wrapper;
- :mod:`distcalc.bench.gemm`        matmul throughput over the GEMM shapes of a transformer layer;
- :mod:`distcalc.bench.results`     writing result files: naming and the hardware/version record (the file
  schema itself is :mod:`distcalc.measurements`, which calibration reads).

``torch`` is an optional dependency (``pip install 'distcalc[bench]'``); it is imported only inside the
functions that need it, so the rest of distcalc works without it.
"""

from __future__ import annotations
