"""Speed of one ``analyze`` evaluation in-process, and of the CLI's start-up.

* ``analyze``: Llama-3-70B on 64 H100 (8 DGX H100), TP 8, PP 2, DP 4, the built-in example's shape;
  median of ``--repeat`` calls after a warm-up call (presets loaded, caches filled). Printed with the ratio
  against the 4 ms that issue "One schema, typed terms…" measured before any work on it, and with the
  fastest call and the mean CPU time per call (the steadier figures on a shared machine).
  Repeating one configuration lets anything cached on that configuration answer every call after the
  first, so a second figure cycles through :data:`CYCLE` — 24 different configurations of the same model
  and cluster (tp, pp, dp, micro-batch, sequence length, recompute, schedule all varying) — and reports the
  same three figures over ``--repeat`` calls taken in turn from that list.
* start-up: ``distcalc --help``, ``distcalc analyze --help`` and ``distcalc analyze`` (the built-in example:
  imports, one evaluation, the tables) wall time and the child's CPU time (medians of ``--runs``
  subprocess runs; the CPU time is the steadier figure on a shared machine), against the import time of
  the runtime dependencies alone (numpy, pydantic, typer, rich, yaml) in a fresh interpreter — the issue's
  target is <= 1.3x. A second ratio is printed against those dependencies *as distcalc uses them*:
  ``import pydantic`` defers its model machinery until ``pydantic.BaseModel`` is first used, and ``import
  rich`` loads neither ``rich.console`` nor ``rich.table``; the command line pays for both whatever distcalc
  itself does, so the difference between the two ratios is dependency time, not distcalc's.

  Every start-up runs with compiled bytecode, as an installed package has it: the children write their .pyc
  into a private temporary cache (``PYTHONPYCACHEPREFIX``), one untimed run of each command fills it, and
  the timed runs take the commands in turn (round-robin) so that a change in the machine's load falls on all
  of them alike. Without that, a caller's ``PYTHONDONTWRITEBYTECODE`` makes every run recompile distcalc's
  ~110 modules from source (about 0.1 s of CPU) but not the dependencies, whose .pyc ship in site-packages;
  ``--recompile`` measures that way on purpose.

  ``--instructions`` also counts the instructions of one run of each (valgrind's callgrind, numpy's OpenBLAS
  on one thread): a figure that other jobs on the machine do not move, for before/after comparisons on a
  loaded machine (needs ``valgrind`` on the PATH; about a minute per command).
* ``--phases``: where ``distcalc analyze``'s start-up goes. A child (:data:`PHASES`) does what the command
  does in four steps and prints the CPU time of each (median of ``--runs`` children; with ``--instructions``
  the instructions of each step too, from one callgrind run per prefix of the steps): the dependencies as used;
  the imports of distcalc (the command line, the analyze command's options and the modules its run loads);
  the first evaluation of the built-in example (presets read, caches filled); then the command itself
  (``main()``: option parsing, a second, warm evaluation and the tables). The dependencies' part is what the
  1.3x target's reference already counts only in part (see the "as used" ratio); the first evaluation and the
  tables are work that importing the dependencies does not do at all.

  ``--analyze-instructions`` counts the instructions of one cycling ``analyze`` call the same way: callgrind
  runs a child that makes 24 + N calls and one that makes 24 (both after the imports and one call of each
  configuration), and the difference divided by N is the figure — independent of the machine's load.

    .venv/bin/python benchmarks/analyze_speed.py [--repeat 200] [--runs 5] [--recompile] [--instructions]
                                                 [--analyze-instructions N] [--phases]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from distcalc.analyze import analyze
from distcalc.parallel import ParallelConfig

BEFORE_MS = 4.0  # the measurement of one analyze call before the restructuring
DISTCALC = str(Path(sys.executable).with_name("distcalc"))
DEPENDENCIES = "import numpy, pydantic, typer, rich, yaml"
DEPENDENCIES_AS_USED = (DEPENDENCIES + ", rich.console, rich.table, rich.panel\n"
                        "from pydantic import BaseModel\nclass First(BaseModel):\n    x: int = 1")


#: The steps of ``distcalc analyze`` (``--phases``): what the console script does, cut where a step ends; each
#: prints ``phase <name> <CPU s>``. Imports run the way the console script runs them (collector paused, then
#: frozen: :mod:`distcalc.cli.startup`).
PHASES: tuple[tuple[str, str], ...] = (
    ("dependencies as used", DEPENDENCIES_AS_USED),
    ("distcalc imports", "from distcalc.cli.startup import collection_paused, command_line_process\n"
                         "command_line_process()\nwith collection_paused():\n    import distcalc.cli\n"
                         "    distcalc.cli._module_commands('analyze_cmd')\n"
                         "    import distcalc.cli.analyze_run, distcalc.memory.report"),
    ("first evaluation", "from distcalc.jobs.analyze import AnalyzeRequest, run_analyze\n"
                         "run_analyze(AnalyzeRequest())"),
    ("command (parse, warm evaluation, tables)",
     "import contextlib, io\nsys.argv = ['distcalc', 'analyze']\n"
     "with contextlib.redirect_stdout(io.StringIO()):\n    try:\n        distcalc.cli.main()\n"
     "    except SystemExit:\n        pass"),
)


def phases_script(steps: int, timed: bool) -> str:
    """The first ``steps`` of :data:`PHASES` as one program (``timed``: printing each step's CPU time)."""
    lines = ["import sys, time", "_t = time.process_time()"]
    for name, code in PHASES[:steps]:
        lines.append(code)
        if timed:
            lines.append(f"_n = time.process_time(); print('phase', {name!r}, _n - _t); _t = _n")
    return "\n".join(lines)


def phases_cpu_s(runs: int, env: dict[str, str]) -> dict[str, float]:
    """Median CPU seconds of each phase over ``runs`` children (after one untimed child)."""
    argv = [sys.executable, "-c", phases_script(len(PHASES), timed=True)]
    subprocess.run(argv, check=True, capture_output=True, env=env)
    samples: dict[str, list[float]] = {name: [] for name, _ in PHASES}
    for _ in range(runs):
        out = subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout
        for line in out.splitlines():
            if line.startswith("phase "):
                name, value = line[len("phase "):].rsplit(" ", 1)
                samples[name.strip("'")].append(float(value))
    return {name: statistics.median(values) for name, values in samples.items()}


def phases_instructions(env: dict[str, str]) -> dict[str, int]:
    """Instructions of each phase: callgrind counts of the programs made of the first 1, 2, … phases, less
    the count of the program one phase shorter (the first less an empty interpreter's)."""
    counts = [instructions([sys.executable, "-c", phases_script(steps, timed=False)], env)
              for steps in range(len(PHASES) + 1)]
    return {name: counts[i + 1] - counts[i] for i, (name, _) in enumerate(PHASES)} | {"interpreter": counts[0]}


#: (tp, pp, micro_batch, seq_len, recompute, vpp) of the cycling figure: 64 GPUs, dp = 64 / (tp·pp),
#: global batch 256, Llama-3-70B (80 layers) on DGX H100
CYCLE: tuple[tuple[int, int, int, int, str, int], ...] = (
    (8, 2, 1, 8192, "none", 1), (8, 4, 1, 4096, "selective", 1), (4, 2, 2, 4096, "full", 1),
    (4, 4, 1, 8192, "selective", 2), (8, 1, 1, 2048, "full", 1), (2, 4, 1, 4096, "full", 1),
    (8, 8, 1, 8192, "none", 1), (4, 8, 2, 2048, "selective", 1), (8, 2, 2, 2048, "selective", 5),
    (2, 8, 1, 8192, "full", 1), (8, 4, 2, 8192, "full", 2), (4, 1, 1, 4096, "full", 1),
    (8, 2, 4, 4096, "selective", 1), (4, 4, 4, 2048, "none", 1), (8, 8, 2, 4096, "selective", 1),
    (2, 2, 1, 2048, "full", 1), (8, 1, 2, 4096, "selective", 1), (4, 2, 1, 8192, "selective", 4),
    (8, 4, 4, 2048, "none", 1), (4, 8, 1, 4096, "full", 1), (8, 2, 1, 16384, "full", 1),
    (2, 4, 2, 2048, "selective", 1), (4, 4, 2, 8192, "full", 1), (8, 8, 4, 2048, "selective", 5),
)


def cycle_configs() -> list[ParallelConfig]:
    """The :data:`CYCLE` configurations (distinct; each valid for Llama-3-70B on 64 GPUs)."""
    return [ParallelConfig(gpus=64, tp=tp, pp=pp, micro_batch=mb, global_batch=256, seq_len=s, recompute=rec,
                           vpp=vpp, sequence_parallel=True, distributed_optimizer=True,
                           **({"schedule": "interleaved"} if vpp > 1 else {}))
            for tp, pp, mb, s, rec, vpp in CYCLE]


def timed_ms(configs: list[ParallelConfig], repeat: int) -> tuple[float, float, float]:
    """(median wall, fastest wall, mean CPU) milliseconds of one ``analyze`` call over ``repeat`` calls that
    take ``configs`` in turn, after one untimed call of each."""
    for config in configs:
        analyze("llama3-70b", "dgx-h100", config)
    samples = []
    cpu_start = time.process_time()
    for i in range(repeat):
        config = configs[i % len(configs)]
        start = time.perf_counter()
        analyze("llama3-70b", "dgx-h100", config)
        samples.append(time.perf_counter() - start)
    cpu = (time.process_time() - cpu_start) / repeat
    return 1e3 * statistics.median(samples), 1e3 * min(samples), 1e3 * cpu


def analyze_ms(repeat: int) -> float:
    return analyze_times_ms(repeat)[0]


def analyze_times_ms(repeat: int) -> tuple[float, float, float]:
    """(median wall, fastest wall, mean CPU) milliseconds of one call. On a machine that other jobs share the
    median wall time counts the waits for a core; the fastest call and the CPU time do not."""
    config = ParallelConfig(gpus=64, tp=8, pp=2, micro_batch=1, global_batch=256, seq_len=8192,
                            sequence_parallel=True, distributed_optimizer=True)
    return timed_ms([config], repeat)


def child_environment(cache_dir: str | None) -> dict[str, str]:
    """The environment of the timed commands: bytecode cached under ``cache_dir`` (None: never written, every
    run compiles what has no .pyc beside its source)."""
    env = dict(os.environ)
    if cache_dir is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache_dir
    return env


def run_s(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall time and CPU time (user + system, from the child's rusage) of one run. CPU time is the steadier
    figure on a machine that other jobs share; wall time is what a user waits."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def startup_s(commands: dict[str, list[str]], runs: int, env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """Median wall and CPU time of each command: one untimed run each (bytecode cache filled), then ``runs``
    rounds that run every command once."""
    for argv in commands.values():
        run_s(argv, env)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            samples[name].append(run_s(argv, env))
    return {name: (statistics.median(w for w, _ in got), statistics.median(c for _, c in got))
            for name, got in samples.items()}


def instructions(argv: list[str], env: dict[str, str]) -> int:
    """Instructions executed by one run of ``argv`` under callgrind (after an untimed run filled the cache)."""
    env = dict(env, OPENBLAS_NUM_THREADS="1")
    subprocess.run(argv, check=True, capture_output=True, env=env)
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                          check=True, capture_output=True, text=True, env=env)
    return int(re.search(r"Collected : (\d+)", done.stderr).group(1))


#: The child that ``--analyze-instructions`` runs: ``argv[1]`` cycling calls after one call of each configuration.
CYCLING_CHILD = ("import sys\nsys.path.insert(0, {here!r})\nfrom analyze_speed import cycle_configs\n"
                 "from distcalc.analyze import analyze\nconfigs = cycle_configs()\n"
                 "for i in range(len(configs) + int(sys.argv[1])):\n"
                 "    analyze('llama3-70b', 'dgx-h100', configs[i % len(configs)])\n")


def analyze_instructions(calls: int) -> float:
    """Instructions of one cycling ``analyze`` call: callgrind's count of a child making ``calls`` more calls
    than a child that only imports and calls each configuration once, divided by ``calls``."""
    code = CYCLING_CHILD.format(here=str(Path(__file__).resolve().parent))
    counts = [instructions([sys.executable, "-c", code, str(n)], dict(os.environ)) for n in (0, calls)]
    return (counts[1] - counts[0]) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5, help="subprocess runs per start-up figure")
    parser.add_argument("--recompile", action="store_true",
                        help="no bytecode cache: every run compiles distcalc's sources (what PYTHONDONTWRITEBYTECODE "
                             "does to a source checkout)")
    parser.add_argument("--analyze-only", action="store_true", help="the analyze figures only, no start-up")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each start-up's instructions (callgrind; needs valgrind)")
    parser.add_argument("--analyze-instructions", type=int, metavar="N", default=0,
                        help="also count the instructions of one cycling analyze call over N calls (callgrind; "
                             "needs valgrind; about 20 s per 100 calls)")
    parser.add_argument("--phases", action="store_true",
                        help="also split distcalc analyze's start-up into dependencies, distcalc's imports, "
                             "the first evaluation and the command's parsing and tables")
    args = parser.parse_args()
    if (args.instructions or args.analyze_instructions) and shutil.which("valgrind") is None:
        parser.error("--instructions and --analyze-instructions need valgrind on the PATH")
    ms, fastest, cpu = analyze_times_ms(args.repeat)
    print(f"analyze (Llama-3-70B, 64 H100): {ms:.3f} ms per call (median of {args.repeat}); "
          f"{BEFORE_MS / ms:.2f}x vs {BEFORE_MS:.1f} ms before; target <= 0.5 ms")
    print(f"  fastest call {fastest:.3f} ms ({BEFORE_MS / fastest:.2f}x); CPU time {cpu:.3f} ms per call "
          f"({BEFORE_MS / cpu:.2f}x)")
    ms, fastest, cpu = timed_ms(cycle_configs(), args.repeat)
    print(f"analyze cycling {len(CYCLE)} configurations (same model and cluster): {ms:.3f} ms per call (median of "
          f"{args.repeat}; {BEFORE_MS / ms:.2f}x); fastest {fastest:.3f} ms; CPU time {cpu:.3f} ms per call "
          f"({BEFORE_MS / cpu:.2f}x)")
    if args.analyze_instructions:
        print(f"instructions of one cycling analyze call (callgrind, {args.analyze_instructions} calls): "
              f"{analyze_instructions(args.analyze_instructions):,.0f}")
    if args.analyze_only:
        return
    commands = {"deps": [sys.executable, "-c", DEPENDENCIES], "used": [sys.executable, "-c", DEPENDENCIES_AS_USED]}
    for argv in ([DISTCALC, "--help"], [DISTCALC, "analyze", "--help"], [DISTCALC, "analyze"]):
        commands[" ".join(Path(argv[0]).name.split() + argv[1:])] = argv
    with tempfile.TemporaryDirectory(prefix="distcalc-pyc-") as cache_dir:
        env = child_environment(None if args.recompile else cache_dir)
        times = startup_s(commands, args.runs, env)
        counts = {name: instructions(argv, env) for name, argv in commands.items()} if args.instructions else {}
        phases = phases_cpu_s(args.runs, env) if args.phases else {}
        phase_counts = phases_instructions(env) if args.phases and args.instructions else {}
    bytecode = "compiled on every run (--recompile)" if args.recompile else "compiled once, cached"
    print(f"start-up, median of {args.runs} runs, wall s / CPU s (bytecode {bytecode}; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs):")
    base, used = times.pop("deps"), times.pop("used")
    print(f"  dependencies alone ({DEPENDENCIES}): {base[0]:.3f} / {base[1]:.3f}")
    print(f"  dependencies as used (+ pydantic.BaseModel's first model, rich.console/table/panel): "
          f"{used[0]:.3f} / {used[1]:.3f}")
    for name, (wall, cpu) in times.items():
        print(f"  {name}: {wall:.3f} / {cpu:.3f}; ratio to the dependencies {wall / base[0]:.2f} wall, "
              f"{cpu / base[1]:.2f} CPU (target <= 1.30); to the dependencies as used {wall / used[0]:.2f} wall, "
              f"{cpu / used[1]:.2f} CPU")
    if counts:
        print("instructions of one run (callgrind, OpenBLAS on one thread):")
        for name, count in counts.items():
            print(f"  {name}: {count:,}; {count / counts['deps']:.2f}x the dependencies, "
                  f"{count / counts['used']:.2f}x the dependencies as used")
    if phases:
        total = sum(phases.values())
        print(f"distcalc analyze in steps (median CPU s of {args.runs} children; each step's share; "
              f"x the dependencies alone, {base[1]:.3f} s):")
        for name, cpu in phases.items():
            print(f"  {name}: {cpu:.3f} s, {100 * cpu / total:.0f} %, {cpu / base[1]:.2f}x")
        print(f"  all steps: {total:.3f} s, {total / base[1]:.2f}x (the interpreter's own start is not in them)")
    if phase_counts:
        interpreter = phase_counts.pop("interpreter")
        print(f"the same steps in instructions (callgrind; the interpreter's start, {interpreter:,}, before them):")
        for name, count in phase_counts.items():
            print(f"  {name}: {count:,}; {count / counts['deps']:.2f}x the dependencies")


if __name__ == "__main__":
    main()
