"""One set of defaults for every command, and a run kept in one YAML file.

:data:`DEFAULTS` is the single schema of the run settings that ``memory``, ``analyze`` and ``search`` share
(model, cluster, GPU count, sequence length, batch); each command's options default to it and its report
header prints each value with where it came from.

A run file is a YAML mapping whose keys are the command's option names (``seq-len`` or ``seq_len``) and
whose values are what one would type after the option (``global-batch: 512``, ``sequence-parallel: true``,
``comm-buffer: 512MiB``). ``distcalc analyze --config run.yaml --tp 4`` reads the file and lets the command
line override it. :func:`dump_run_file` writes such a file (the web app's "export" uses it) and
:func:`load_run_file` reads and checks one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from distcalc.errors import ConfigError
from distcalc.parallel_schema import ParallelFields, require_positive
from distcalc.inputs import MAX_MODEL_FILE_BYTES, excerpt, read_data_file
from distcalc.suggest import did_you_mean


@dataclass(frozen=True)
class RunDefaults:
    """Defaults shared by memory, analyze and search (one node of 8 H100 running Llama 3 8B)."""

    model: str = "llama3-8b"
    cluster: str = "dgx-h100"
    gpus: int = 8
    seq_len: int = ParallelFields.model_fields["seq_len"].default  # one default: the configuration's
    micro_batch: int = ParallelFields.model_fields["micro_batch"].default


DEFAULTS = RunDefaults()


def default_values() -> dict[str, Any]:
    """:data:`DEFAULTS` as a plain mapping."""
    return asdict(DEFAULTS)


def _key(name: Any) -> str:
    return str(name).strip().lstrip("-").replace("-", "_").lower()


#: Keys whose value is a mapping (an uploaded Hugging Face config.json in a run file the web page exports).
MAPPING_KEYS = frozenset({"model_config_json"})


def normalize_run_values(values: Mapping[str, Any], valid_keys: Iterable[str], source: str) -> dict[str, Any]:
    """``values`` keyed by Python parameter names; :class:`ConfigError` for an unknown key (with a
    "did you mean") or a value that is a mapping."""
    valid = sorted(set(valid_keys))
    out: dict[str, Any] = {}
    for raw, value in values.items():
        key = _key(raw)
        if key not in valid:
            shown = ", ".join(k.replace("_", "-") for k in valid)
            raise ConfigError(f"{source}: unknown key {excerpt(str(raw))}{did_you_mean(key, valid)}; valid keys: "
                              f"{shown}")
        if isinstance(value, dict) and key not in MAPPING_KEYS:
            raise ConfigError(f"{source}: key {excerpt(str(raw))} must be a single value, not a mapping")
        out[key] = ",".join(str(v) for v in value) if isinstance(value, list) else value
    return out


def load_run_file(path: str | Path, valid_keys: Iterable[str]) -> dict[str, Any]:
    """The settings of a YAML run file keyed by Python parameter names (checked against ``valid_keys``); read
    through :func:`distcalc.inputs.read_data_file` (size cap, strict decoding, no YAML aliases, bounded
    nesting)."""
    path = Path(path).expanduser()
    data = read_data_file(path, "--config file", error=ConfigError, max_bytes=MAX_MODEL_FILE_BYTES)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"--config {excerpt(str(path))} does not hold a mapping of option names to values")
    return normalize_run_values(data, valid_keys, f"--config {excerpt(str(path))}")


def dump_run_file(values: Mapping[str, Any], command: str | None = None) -> str:
    """YAML text of a run file: ``values`` keyed by option names (``seq-len``), None values left out; enums
    written by value. ``command`` becomes a comment naming how to replay the file."""
    lines = [f"# distcalc {command} --config <this file>"] if command else []
    clean = {}
    for name, value in values.items():
        if value is None:
            continue
        clean[_key(name).replace("_", "-")] = getattr(value, "value", value)
    body = yaml.safe_dump(clean, sort_keys=False, default_flow_style=False)
    return "\n".join(lines + [body.rstrip("\n")]) + "\n"


def default_gpus(tp: int = 1, pp: int = 1, cp: int = 1, dp: int | None = None) -> tuple[int, str]:
    """The GPU count when ``--gpus`` is not given, and why: tp·pp·cp·dp when dp is given, else one node
    (:data:`DEFAULTS`.gpus) when tp·pp·cp divides it, else tp·pp·cp (dp = 1)."""
    require_positive(tp=tp, pp=pp, cp=cp, dp=dp)
    model_parallel = tp * pp * cp
    if dp is not None:
        return model_parallel * dp, "tp·pp·cp·dp"
    if DEFAULTS.gpus % model_parallel == 0:
        return DEFAULTS.gpus, "default"
    return model_parallel, "tp·pp·cp"
