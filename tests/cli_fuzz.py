"""The argument-vector space of the CLI fuzzer, shared by ``tests/test_cli_fuzz.py`` (hypothesis, in CI) and
``benchmarks/fuzz_cli.py`` (thousands of vectors, another seed).

A vector is a command with options drawn from per-option pools of values; every pool value is tagged valid
or *known invalid* for that option (a negative GPU count, a size ``1XB``, a plot into a missing folder, a
model file with a string width ...). Input files (model YAML/JSON, Hugging Face ``config.json``, calibration,
bench results) are written per vector, valid or with one mutation. :func:`run_vector` runs the vector
in-process and returns the :class:`Outcome` the oracles judge:

* exit code 0, 2 or 3 (a valid configuration that does not fit in GPU memory: the report is printed, as with
  0) only, no traceback, no exception escaping the command;
* with ``--json`` and exit 0: no NaN/±inf, no negative and no null quantity (``*_s``, ``*_bytes``,
  ``*_per_s``, ``mfu``, ``hfu``) anywhere in the output;
* a vector holding a known-invalid value exits 2 (else: a *silent accept*);
* the run ends within the time bound (else: a *hang*).

``choose(values)`` is the only source of randomness, so the same space drives hypothesis (``data.draw``)
and a seeded :class:`random.Random`.
"""

from __future__ import annotations

import json
import math
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

Choose = Callable[[list[Any]], Any]
#: The CLI's exit code for a configuration that does not fit in GPU memory (memory, analyze, search).
EXIT_OOM = 3
Value = tuple[Any, bool]  # (value, known invalid)

HF_DIR = Path(__file__).parent / "fixtures" / "hf"
QUANTITY_SUFFIXES = ("_s", "_bytes", "_per_s")
QUANTITY_KEYS = {"mfu", "hfu"}
#: Quantity keys (or key paths) whose null is documented: an infinite segment end / slope in a calibration
#: (saved as null), a prediction that needs a calibration, a search target that was not given.
NULL_ALLOWED = ("max_size_bytes", "bandwidth_bytes_per_s", "predicted_step_time_s", "predicted_memory_bytes",
                "predicted_compute_s", "predicted_communication_s",
                "peak_flops_per_s", "l2_bandwidth_bytes_per_s", "targets.step_time_s", "targets.memory_bytes")
#: Keys that may be negative: signed errors and differences (headroom < 0: the model does not fit).
SIGNED = ("error", "residual", "difference", "delta", "gap", "bias", "saving", "headroom")


def ok(*values: Any) -> list[Value]:
    return [(v, False) for v in values]


def bad(*values: Any) -> list[Value]:
    return [(v, True) for v in values]


COUNT = ok(1, 2, 4, 8, 16) + bad(0, -1, 10**12, "abc", "2.5", "")
DEGREE = ok(1, 2, 4, 8) + bad(0, -2, 10**12, "x")
NONNEG = ok(0, 1, 3) + bad(-1, "z")
SIZE = ok("1KiB", "64KiB", "1MiB", "256MB", "1GiB") + bad("0", "-1", "1XB", "nan", "inf", "1e400B", "")
SIZE_RANGE = ok("1KiB..8KiB", "1MiB", "4KiB..4KiB") + bad("8KiB..1KiB", "1XB..2KiB", "0..1KiB", "-1..4KiB")
RATE = ok("100GB/s", "400Gbps", "25GB/s") + bad("0", "-5GB/s", "nan", "inf", "fast", "1e400GB/s")
TIME = ok("5us", "1us", "0.5ms") + bad("-1us", "nan", "inf", "soon")
FRACTION = ok(0.0, 0.1, 0.5) + bad(-0.1, "nan", "inf", 1.5, "x")
TOKENS = ok(1e12, 15e12) + bad(-1, 0, "nan", "inf", "lots")
TOPOLOGY = ok("ring", "tree", "hierarchical", "switch", "mesh", "torus") + bad("bogus", "")
KINDS = ["all-reduce", "reduce-scatter", "all-gather", "broadcast", "reduce", "gather", "scatter", "all-to-all"]
ALGORITHM = ok("auto", "all", "ring", "direct") + bad("bogus")
MODELS = ok("llama3-8b", "gpt3-175b", "mixtral-8x7b", "llama2-7b") + bad("no-such-model")
CLUSTERS = ok("dgx-a100", "dgx-h100") + bad("no-such-cluster")
GPUS_PRESET = ok("a100-80gb", "h100-sxm", "h200") + bad("no-such-gpu")
RECOMPUTE = ok("none", "selective", "full") + bad("half")
SCHEDULE = ok("1f1b", "gpipe", "interleaved") + bad("pipedream")
DTYPE = ok("bf16", "fp16", "fp8") + bad("fp7")
TIMEOUT = ok(60.0, 120.0) + bad("nan", "inf", 0, -1, "soon")
MODEL_FIELDS = ["hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                "intermediate_size", "vocab_size", "max_position_embeddings", "tie_word_embeddings",
                "hidden_act", "num_local_experts", "num_experts_per_tok"]
JUNK = [0, -1, -4096, "768", 4096.5, True, None, [1], {"a": 1}, 10**30, "", "NaN"]


@dataclass
class Vector:
    """One generated command line and whether it holds a known-invalid value (``why``)."""

    args: list[str]
    invalid: bool = False
    why: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """What running a vector gave, and the oracles' verdicts."""

    vector: Vector
    exit_code: int | None
    output: str
    elapsed_s: float
    traceback: bool = False
    hang: bool = False
    bad_json: list[str] = field(default_factory=list)
    silent_accept: bool = False
    bad_exit: bool = False

    @property
    def failed(self) -> bool:
        return self.traceback or self.hang or bool(self.bad_json) or self.silent_accept or self.bad_exit


class _Builder:
    def __init__(self, choose: Choose, workdir: Path, index: int) -> None:
        self.choose, self.workdir, self.index = choose, workdir, index
        self.vector = Vector([])
        self.clean = choose([True, False])  # half of the vectors draw valid values only (answers are checked)

    def maybe(self, option: str, pool: list[Value], probability_of: int = 3) -> None:
        """Add ``option`` with a value from ``pool`` about once in ``probability_of`` draws."""
        if self.choose(list(range(probability_of))) == 0:
            self.add(option, pool)

    def add(self, option: str, pool: list[Value]) -> None:
        valid = [item for item in pool if not item[1]]
        value, invalid = self.choose(valid if self.clean and valid else pool)
        self.vector.args += [option, str(value)]
        if invalid:
            self.vector.invalid = True
            self.vector.why.append(f"{option} {value!r}")

    def flag(self, option: str) -> None:
        if self.choose([True, False]):
            self.vector.args.append(option)

    def path_pool(self, suffixes: tuple[str, ...], stem: str) -> list[Value]:
        base = self.workdir / f"v{self.index}"
        good = ok(*(str(base / f"{stem}{suffix}") for suffix in suffixes))
        return good + bad(str(base / "missing" / f"{stem}{suffixes[0]}"), str(base / f"{stem}.xyz"),
                          str(base / stem), str(base))

    # ---------------------------------------------------------------- files
    def model_file(self) -> Value:
        """A model file: an HF config.json or a distcalc YAML/JSON spec, valid or with one mutation."""
        base = self.workdir / f"v{self.index}"
        source = self.choose(sorted(p.name for p in HF_DIR.glob("*.json")))
        data = json.loads((HF_DIR / source).read_text())
        mutations = ["none", "field", "binary", "truncate", "deep", "alias", "nan", "list"]
        mutation = "none" if self.clean else self.choose(mutations)
        suffix = self.choose([".json", ".yaml"])
        path = base / f"model{suffix}"
        if mutation == "field":
            key = self.choose([k for k in MODEL_FIELDS if k in data] or ["hidden_size"])
            junk = self.choose(JUNK)
            data[key] = junk
            invalid = not _still_valid_model(source, key, junk)
        else:
            invalid = mutation != "none"
        text = json.dumps(data) if suffix == ".json" else _yaml_text(data)
        if mutation == "binary":
            path.write_bytes(b"\xff\xfe" + text.encode()[:50] + b"\x80")
            return str(path), True
        if mutation == "truncate":
            text = text[: len(text) // 2]
        elif mutation == "deep":
            text = "[" * 5000 + "]" * 5000
        elif mutation == "alias":
            path = base / "model.yaml"
            text = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
                f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
        elif mutation == "nan":
            path = base / "model.yaml"
            text = _yaml_text(data) + "attention_dropout: .nan\n"
        elif mutation == "list":
            text = "[1, 2, 3]"
        path.write_text(text)
        return str(path), invalid

    def calibration_file(self) -> Value:
        base = self.workdir / f"v{self.index}"
        data = json.loads(calibration_text())
        mutations = ["none", "negative", "nan", "string", "empty-segments", "binary", "schema"]
        mutation = "none" if self.clean else self.choose(mutations)
        path = base / "cal.json"
        fit = data["fits"][self.choose(list(range(len(data["fits"]))))]
        if mutation == "negative":
            target = self.choose([fit, fit["segments"][0]])
            target[self.choose(["latency_s", "bandwidth_bytes_per_s"])] = -abs(target.get("bandwidth_bytes_per_s") or 1)
        elif mutation == "string":
            fit["segments"][0]["latency_s"] = "5us"
        elif mutation == "empty-segments":
            fit["segments"] = []
        elif mutation == "schema":
            data["schema"] = "other/1"
        text = json.dumps(data)
        if mutation == "nan":
            text = text.replace(repr(fit["segments"][0]["latency_s"]), "NaN", 1)
        if mutation == "binary":
            path.write_bytes(b"\x00\xff" + text.encode()[:40])
        else:
            path.write_text(text)
        return str(path), mutation != "none"

    def results_file(self) -> Value:
        base = self.workdir / f"v{self.index}"
        data = json.loads(_results_text())
        mutations = ["none", "negative", "inf", "theme", "string", "missing", "deep"]
        mutation = "none" if self.clean else self.choose(mutations)
        row = data["results"][self.choose(list(range(len(data["results"]))))]
        if mutation == "negative":
            row[self.choose(["time_s", "size_bytes", "p99_time_s"])] = -1
        elif mutation == "string":
            row["time_s"] = "fast"
        elif mutation == "theme":
            data["theme"] = "weather"
        elif mutation == "missing":
            del data["results"][0]["collective"]
        text = json.dumps(data)
        if mutation == "inf":
            text = text.replace(json.dumps(row["time_s"]), "Infinity", 1)
        elif mutation == "deep":
            text = "[" * 3000 + "]" * 3000
        path = base / "results.json"
        path.write_text(text)
        return str(path), mutation != "none"

    def options_file(self) -> Value:
        """An ``analyze --config`` YAML of options, valid or with one mutation."""
        base = self.workdir / f"v{self.index}"
        data: dict[str, Any] = {"model": "llama3-8b", "cluster": "dgx-h100", "gpus": 16, "tp": 8, "seq_len": 4096}
        mutations = ["none", "unknown", "negative", "string", "alias", "binary", "list"]
        mutation = "none" if self.clean else self.choose(mutations)
        if mutation == "unknown":
            data["bogus_option"] = 1
        elif mutation == "negative":
            data[self.choose(["tp", "gpus", "seq_len"])] = -8
        elif mutation == "string":
            data["tp"] = "eight"
        text = _yaml_text(data)
        if mutation == "alias":
            text = "a: &a [1, 2]\nb: *a\n" + text
        elif mutation == "list":
            text = "- 1\n- 2\n"
        path = base / "options.yaml"
        path.write_bytes(b"\xff\xfe" + text.encode()) if mutation == "binary" else path.write_text(text)
        return str(path), mutation != "none"

    def add_file(self, option: str, make: Callable[[], Value], presets: list[Value] | None = None) -> None:
        if presets and self.choose([True, False]):
            self.add(option, presets)
            return
        value, invalid = make()
        self.add(option, [(value, invalid)])


def _still_valid_model(source: str, key: str, junk: Any) -> bool:
    """A mutation that leaves the model valid (e.g. null for an optional field)."""
    optional = {"num_key_value_heads", "tie_word_embeddings", "max_position_embeddings", "hidden_act",
                "num_local_experts", "num_experts_per_tok"}
    return junk is None and key in optional


def _yaml_text(data: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False)


_CACHE: dict[str, str] = {}


def calibration_text() -> str:
    """A real calibration (fitted to an exact synthetic gloo sweep of N = 4, α = 20 µs, B = 10 GB/s)."""
    if "cal" not in _CACHE:
        from distcalc.calibration import Calibration
        from distcalc.calibration.collectives import BACKEND_ALGORITHMS, fit_sweep, model_coefficients

        rows = []
        for kind in ("all-reduce", "all-gather", "reduce-scatter"):
            steps, phi = model_coefficients(kind, 4, BACKEND_ALGORITHMS["gloo"][kind])
            for exponent in range(10, 25, 2):
                size = float(4 * 2**exponent)
                t = steps * 20e-6 + phi * size / 10e9
                rows.append({"collective": kind, "tier": "intra", "group_size": 4, "size_bytes": size, "time_s": t,
                             "p99_time_s": 1.05 * t})
        calibration = Calibration(backend="gloo", world_size=4, fits=[f.as_dict() for f in fit_sweep(rows, "gloo")])
        from distcalc.calibration import _finite

        _CACHE["cal"] = json.dumps(_finite(calibration.model_dump(by_alias=True)))
    return _CACHE["cal"]


def _results_text() -> str:
    """A bench collectives result file (the rows a gloo sweep of 2 ranks writes, times from α-β)."""
    if "results" not in _CACHE:
        rows = []
        for kind, factor in (("all-reduce", 1.0), ("all-gather", 0.5)):
            for exponent in range(10, 20):
                size = 2**exponent
                t = 30e-6 + factor * size / 5e9
                rows.append({"collective": kind, "tier": "intra", "group_size": 2, "size_bytes": size, "time_s": t,
                             "p99_time_s": 1.1 * t, "trials": 5, "trial_times_s": [t] * 5,
                             "algbw_bytes_per_s": size / t, "busbw_bytes_per_s": factor * size / t})
        _CACHE["results"] = json.dumps({
            "schema": "distcalc.bench/1", "theme": "collectives", "created": "2025-01-01T00:00:00+00:00",
            "hardware": {"host": "h", "device": "cpu"}, "versions": {}, "backend": "gloo", "world_size": 2,
            "config": {}, "results": rows})
    return _CACHE["results"]


# -------------------------------------------------------------------- commands
def _topology_options(b: _Builder, simulate: bool) -> None:
    b.maybe("--topology", TOPOLOGY, 2)
    b.maybe("--gpus", COUNT if not simulate else ok(1, 2, 4, 8, 16) + bad(0, -1, 10**12, "x"), 2)
    b.maybe("--size", SIZE_RANGE if not simulate else SIZE)
    b.maybe("--bandwidth", RATE)
    b.maybe("--latency", TIME)
    b.maybe("--gpus-per-node", DEGREE, 4)
    b.maybe("--algorithm", ALGORITHM, 4)
    b.maybe("--oversubscription", ok(1.0, 2.0) + bad(0.5, "nan", "inf"), 6)
    b.maybe("--intra-bandwidth", RATE, 6)
    b.maybe("--inter-latency", TIME, 6)


def _collective(b: _Builder) -> None:
    kind = b.choose(KINDS + ["send-recv", "bogus"])
    b.vector.args = ["collective", kind]
    if kind == "bogus":
        b.vector.invalid, b.vector.why = True, ["kind 'bogus'"]
    _topology_options(b, simulate=False)
    if kind == "send-recv":
        b.maybe("--src", ok(0) + bad(-1, 10**12), 3)
        b.maybe("--dst", ok(1, 3) + bad(-1, 0, 10**12), 3)
    b.maybe("--plot", b.path_pool((".png", ".svg", ".pdf"), "plot"), 8)
    if b.choose([True, False, False]):
        b.add_file("--calibration", b.calibration_file)
    if b.choose([True, False, False, False]):  # the NCCL tuning model on a cluster preset
        b.add("--cluster", CLUSTERS)
        b.maybe("--algorithm", ok("nccl") + bad("nccl-bogus"), 2)
        b.maybe("--nccl-version", ok("2.18.5", "2.20.5") + bad("9.9.9"), 4)


def _simulate(b: _Builder) -> None:
    b.vector.args = ["simulate", b.choose(KINDS)]
    _topology_options(b, simulate=True)
    b.maybe("--elements", ok(1, 2, 4) + bad(0, -1, 10**9), 4)
    b.maybe("--segments", ok(1, 4) + bad(0, -3), 6)
    b.maybe("--seed", NONNEG, 6)
    b.maybe("--plot", b.path_pool((".png",), "sim"), 10)


def _training(b: _Builder, memory: bool) -> None:
    if b.choose([True, False, False]):
        b.add_file("--model", b.model_file)
    else:
        b.add("--model", MODELS)
    b.maybe("--gpu", GPUS_PRESET, 4)
    b.maybe("--gpus", ok(8, 16, 64) + bad(0, -8, 10**12), 2)
    for option in ("--tp", "--pp", "--cp", "--ep", "--vpp", "--dp"):
        b.maybe(option, DEGREE, 5)
    b.maybe("--zero", ok(0, 1, 2, 3) + bad(4, -1), 5)
    b.maybe("--micro-batch", COUNT, 5)
    b.maybe("--global-batch", ok(64, 512) + bad(0, -1, 10**12), 5)
    b.maybe("--seq-len", ok(2048, 4096) + bad(0, -1, 10**12), 5)
    b.maybe("--recompute", RECOMPUTE, 5)
    b.maybe("--schedule", SCHEDULE, 6)
    b.maybe("--dtype", DTYPE, 6)
    b.maybe("--plot", b.path_pool((".png",), "fig"), 12)
    if memory:
        b.maybe("--allocator-reserve", FRACTION, 6)
        b.maybe("--comm-buffer", SIZE, 8)
        return
    b.maybe("--cluster", CLUSTERS, 3)
    b.maybe("--tokens", TOKENS, 4)
    b.maybe("--tp-overlap", FRACTION, 6)
    b.maybe("--inter-bandwidth", RATE, 6)
    b.maybe("--intra-latency", TIME, 6)
    b.maybe("--gpus-per-node", DEGREE, 8)
    b.maybe("--cp-algorithm", ok("ring", "ulysses", "all-gather") + bad("star"), 6)
    b.maybe("--attention-kernel", ok("fused", "flash2") + bad("flash9"), 6)
    if b.choose([True, False, False, False]):
        b.add_file("--calibration", b.calibration_file)
    if b.choose([True, False, False, False]):
        b.add_file("--config", b.options_file)


def _memory(b: _Builder) -> None:
    b.vector.args = ["memory"]
    _training(b, memory=True)


def _analyze(b: _Builder) -> None:
    b.vector.args = ["analyze"]
    _training(b, memory=False)


def _search(b: _Builder) -> None:
    b.vector.args = ["search"]
    if b.choose([True, False, False]):
        b.add_file("--model", b.model_file)
    else:
        b.add("--model", ok("llama3-8b", "llama2-7b") + bad("no-such-model"))
    b.add("--gpus", ok("8", "16", "8..32", "8,16") + bad("0", "-8", "x", str(10**12), "32..8", "1..2000000"))
    b.maybe("--cluster", CLUSTERS, 3)
    b.maybe("--global-batch", ok(32, 64) + bad(0, -1, 10**12), 4)
    b.maybe("--seq-len", ok(1024, 2048) + bad(0, -1, 10**12), 5)
    b.maybe("--top", ok(1, 5) + bad(0, -1), 5)
    b.maybe("--headroom", FRACTION, 5)
    b.maybe("--zero", ok("0,1", "3") + bad("7", "x"), 5)
    b.maybe("--recompute", ok("selective", "none,full") + bad("half"), 6)
    b.maybe("--output", b.path_pool((".csv",), "rows"), 8)
    if b.choose([True, False, False, False]):
        b.add_file("--calibration", b.calibration_file)


def _topologies(b: _Builder) -> None:
    b.vector.args = ["topologies"]
    b.maybe("--gpus", ok(8, 64, 256) + bad(0, -1, 10**12, "x"), 1)
    b.maybe("--gpus-per-node", ok(8) + bad(0, -1), 3)


def _calibrate(b: _Builder) -> None:
    b.vector.args = ["calibrate"]
    value, invalid = b.results_file()
    b.vector.args.append(value)
    if invalid:
        b.vector.invalid, b.vector.why = True, b.vector.why + ["results file mutated"]
    b.add("--output", b.path_pool((".json",), "cal-out"))
    b.flag("--holdout")


def _presets(b: _Builder) -> None:
    b.vector.args = ["presets"]


def _validate(b: _Builder) -> None:
    b.vector.args = ["validate"]
    b.maybe("--set", ok("gpu-kernels", "memory") + bad("no-such-set"), 1)


def _bench(b: _Builder, runs: bool) -> None:
    """bench commands; unless ``runs``, at least one option is known-invalid so nothing is spawned."""
    theme = b.choose(["collectives", "gemm", "training"])
    b.vector.args = ["bench", theme]
    if theme == "gemm":
        b.add("--hidden", ok(32, 64) + bad(0, -1, 10**12))
        b.add("--heads", ok(2, 4) + bad(0, -4))
        b.add("--tokens", ok("16..32", "16") + bad("0..16", "32..16", "x"))
        b.add("--trials", ok(1, 2) + bad(0, -1))
        b.add("--warmup", ok(0, 1) + bad(-1))
        b.maybe("--device", ok("cpu") + bad("tpu", "cuda:x", ""), 2)
        b.maybe("--dtype", ok("float32") + bad("int3"), 4)
        b.maybe("--peak-flops", ok("3e11") + bad("-1", "nan", "inf", "fast"), 4)
    else:
        b.add("--nproc", ok(2) + bad(0, -2, 10**6, "x"))
        b.add("--timeout", TIMEOUT)
        if theme == "collectives":
            b.add("--sizes", ok("1KiB..2KiB") + bad("2KiB..1KiB", "1XB..2KiB"))
            b.add("--collectives", ok("all-reduce", "all-gather,broadcast") + bad("bogus"))
            b.add("--trials", ok(1, 2) + bad(0, -1))
            b.add("--warmup", ok(0) + bad(-1))
            b.maybe("--plot", b.path_pool((".png",), "busbw"), 4)
        else:
            b.add("--mode", ok("dp", "pp") + bad("zz"))
            b.add("--hidden", ok(32) + bad(0, -32, 10**12))
            b.add("--heads", ok(2))
            b.add("--layers", ok(2) + bad(0, -2))
            b.add("--seq-len", ok(8) + bad(0, -8))
            b.add("--steps", ok(1) + bad(0))
    b.maybe("--output", b.path_pool((".json",), "bench"), 2)
    if not runs and not b.vector.invalid:
        b.add("--timeout" if theme != "gemm" else "--trials", bad(-1))


COMMANDS: dict[str, Callable[[_Builder], None]] = {
    "collective": _collective, "simulate": _simulate, "memory": _memory, "analyze": _analyze, "search": _search,
    "topologies": _topologies, "calibrate": _calibrate, "validate": _validate, "presets": _presets,
    "bench": lambda b: _bench(b, runs=False), "bench-run": lambda b: _bench(b, runs=True),
}


def make_vector(choose: Choose, workdir: Path, index: int, commands: list[str]) -> Vector:
    """Draw one vector (its files go under ``workdir/v<index>``)."""
    (workdir / f"v{index}").mkdir(parents=True, exist_ok=True)
    builder = _Builder(choose, workdir, index)
    COMMANDS[choose(commands)](builder)
    if builder.vector.args[0] != "bench" and choose([True, True, False]):
        builder.vector.args.append("--json")
    elif builder.vector.args[0] == "bench" and choose([True, False]):
        builder.vector.args.append("--json")
    return builder.vector


# -------------------------------------------------------------------- running and judging
class _TimeBound(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _TimeBound()


def bad_json_values(value: Any, where: str = "") -> list[str]:
    """Paths of NaN/inf anywhere, and of negative or null quantities (:data:`QUANTITY_SUFFIXES`)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            quantity = (key.endswith(QUANTITY_SUFFIXES) or key in QUANTITY_KEYS) and not any(s in key for s in SIGNED)
            if quantity and item is None and not path.endswith(NULL_ALLOWED):
                found.append(f"{path}=null")
            if quantity and isinstance(item, (int, float)) and not isinstance(item, bool) and item < 0:
                found.append(f"{path}={item}")
            if quantity and isinstance(item, list):
                found += [f"{path}[{i}]={x}" for i, x in enumerate(item)
                          if isinstance(x, (int, float)) and not isinstance(x, bool) and x < 0]
            found += bad_json_values(item, path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += bad_json_values(item, f"{where}[{index}]")
    elif isinstance(value, float) and not math.isfinite(value):
        found.append(f"{where}={value}")
    return found


def run_vector(vector: Vector, time_bound_s: float = 60.0) -> Outcome:
    """Run ``vector`` in-process (typer's CliRunner) under a SIGALRM time bound and judge it."""
    from typer.testing import CliRunner

    from distcalc.cli import app

    runner = CliRunner()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, time_bound_s)
    start = time.monotonic()
    try:
        result = runner.invoke(app, vector.args, catch_exceptions=True)
        hang = isinstance(result.exception, _TimeBound)
    except _TimeBound:
        result, hang = None, True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.monotonic() - start
    if result is None or hang:
        return Outcome(vector, None, "", elapsed, hang=True)
    text = result.output
    escaped = result.exception is not None and not isinstance(result.exception, SystemExit)
    outcome = Outcome(vector, result.exit_code, text, elapsed,
                      traceback=escaped or "Traceback" in text, bad_exit=result.exit_code not in (0, 2, EXIT_OOM))
    if escaped:
        outcome.output = f"{type(result.exception).__name__}: {result.exception}"[:500]
    if result.exit_code in (0, EXIT_OOM) and "--json" in vector.args:
        try:
            payload = json.loads(result.stdout)
        except ValueError:
            outcome.bad_json = ["stdout is not one JSON object"]
        else:
            outcome.bad_json = bad_json_values(payload)
    if result.exit_code == 2:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines or not lines[-1].startswith("error: "):
            outcome.bad_exit = True
    outcome.silent_accept = vector.invalid and result.exit_code in (0, EXIT_OOM)
    return outcome
