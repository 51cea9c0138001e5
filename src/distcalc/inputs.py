"""The input boundary: every file distcalc reads from a user goes through :func:`read_data_file`.

A user file (model YAML/JSON, Hugging Face ``config.json``, calibration file, bench result file) is

* **size-capped** before it is read (:data:`MAX_MODEL_FILE_BYTES`, :data:`MAX_DATA_FILE_BYTES`): a model
  description is a few kilobytes, a bench sweep a few megabytes;
* **decoded strictly** as UTF-8 (a binary file is refused, not half-read);
* **parsed safely**: JSON without ``NaN``/``Infinity``; YAML with the safe loader and *no aliases* (a
  384-byte alias bomb would otherwise expand to gigabytes), both with a nesting limit
  (:data:`MAX_NESTING`) instead of a ``RecursionError``;
* **checked for non-finite numbers** (YAML ``.nan``/``.inf``) anywhere in the tree, named by field path.

Every refusal raises the caller's :class:`~distcalc.errors.DistcalcError` subclass with one line naming the
file, the field where there is one, and what is valid; input text is quoted through :func:`excerpt` (at most
:data:`EXCERPT_CHARS` characters), never in full. The schema checks per file kind (types, signs, ranges) live
next to the records they protect and call :func:`field_error` / :func:`require_int` /
:func:`require_number` for uniform messages.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from distcalc.errors import ConfigError, DistcalcError

#: Largest model description read (a Hugging Face config.json is 1-5 KB; DeepSeek-V3's is 1.7 KB).
MAX_MODEL_FILE_BYTES = 1 << 20
#: Largest calibration or bench result file read (a 7-collective × 2-tier × 20-size sweep with 20 trial
#: times per row is about 0.5 MB).
MAX_DATA_FILE_BYTES = 64 << 20
#: Deepest nesting of lists/mappings accepted (distcalc's own files nest at most 5 levels).
MAX_NESTING = 32
#: Longest excerpt of user input quoted in an error message.
EXCERPT_CHARS = 40
#: Longest file name quoted in an error message.
PATH_CHARS = 160

__all__ = ["MAX_DATA_FILE_BYTES", "MAX_MODEL_FILE_BYTES", "MAX_NESTING", "PATH_CHARS", "excerpt", "field_error",
           "read_data_file", "require_int", "require_number", "shorten"]


def shorten(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to ``limit`` characters (the last one ``…``)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """``repr`` of ``value`` cut to ``limit`` characters (``'abc…'``), for quoting user input safely."""
    return shorten(repr(value), limit)


def field_error(error: type[DistcalcError], what: str, path: str | Path, field: str, problem: str) -> DistcalcError:
    """``<what> 'path': field <field> <problem>`` as ``error`` (one line)."""
    return error(f"{what} {excerpt(str(path), PATH_CHARS)}: field {field} {problem}")


def _read_text(path: Path, what: str, max_bytes: int, error: type[DistcalcError]) -> str:
    name = excerpt(str(path), PATH_CHARS)
    try:
        if not path.exists():
            raise error(f"{what} {name} does not exist")
        if path.is_dir():
            raise error(f"{what} {name} is a folder; give a file")
        size = path.stat().st_size
        if size > max_bytes:
            raise error(f"{what} {name} is {size:,} bytes; the limit is {max_bytes:,} bytes")
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)  # a device or FIFO reports size 0: cap the read itself
    except OSError as problem:
        raise error(f"{what} {name} cannot be read: {problem.strerror or problem}") from None
    if len(raw) > max_bytes:
        raise error(f"{what} {name} is larger than the limit of {max_bytes:,} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as problem:
        raise error(f"{what} {name} is not UTF-8 text (byte {raw[problem.start]:#04x} at offset "
                    f"{problem.start}); expected a JSON or YAML file") from None


class _NoAliasLoader(yaml.SafeLoader):
    """The YAML safe loader without aliases (``*name``): user files never need them, and an alias bomb
    (anchors referencing anchors) expands exponentially."""

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D102 - PyYAML hook
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise yaml.YAMLError(f"YAML aliases (*{shorten(str(event.anchor), 20)}) are not accepted "
                                 f"(line {event.start_mark.line + 1})")
        return super().compose_node(parent, index)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a finite number")


def _parse(text: str, is_json: bool) -> Any:
    if is_json:
        return json.loads(text, parse_constant=_reject_constant)
    return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass


def _check_tree(value: Any, where: str, depth: int) -> str | None:
    """The first problem in a parsed tree (too deep, non-finite number, non-string key), or None."""
    if depth > MAX_NESTING:
        return f"{where or 'the top level'} is nested deeper than {MAX_NESTING} levels"
    if isinstance(value, float) and not math.isfinite(value):
        return f"field {where or '(top level)'} is {value}; numbers must be finite"
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{where or 'the top level'} has a non-text key {excerpt(key)}"
            problem = _check_tree(item, f"{where}.{key}" if where else key, depth + 1)
            if problem:
                return problem
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problem = _check_tree(item, f"{where}[{index}]", depth + 1)
            if problem:
                return problem
    return None


def read_data_file(path: str | Path, what: str, *, error: type[DistcalcError] = ConfigError,
                   max_bytes: int = MAX_DATA_FILE_BYTES, json_only: bool = False) -> Any:
    """Read, size-check, decode and safely parse a JSON (``.json`` or ``json_only``) or YAML file.

    Raises ``error`` with a one-line message naming ``what`` (e.g. ``"model file"``), the file and the
    problem. The returned tree holds only finite numbers and string keys, at most :data:`MAX_NESTING` deep.
    """
    path = Path(path)
    text = _read_text(path, what, max_bytes, error)
    name = excerpt(str(path), PATH_CHARS)
    is_json = json_only or path.suffix.lower() == ".json"
    kind = "JSON" if is_json else "YAML"
    try:
        data = _parse(text, is_json)
    except RecursionError:
        raise error(f"{what} {name} is nested deeper than {MAX_NESTING} levels") from None
    except yaml.MarkedYAMLError as problem:
        mark = problem.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise error(f"{what} {name} is not valid {kind}: {problem.problem}{where}") from None
    except (ValueError, yaml.YAMLError) as problem:
        first = str(problem).splitlines()[0] if str(problem) else type(problem).__name__
        raise error(f"{what} {name} is not valid {kind}: {shorten(first, 120)}") from None
    problem_text = _check_tree(data, "", 0)
    if problem_text:
        raise error(f"{what} {name}: {problem_text}")
    return data


def require_int(value: Any, *, low: int = 1, high: int | None = None) -> str | None:
    """Why ``value`` is not an integer in ``[low, high]`` (``None`` if it is). ``bool`` is not an integer;
    neither is ``"768"`` nor ``768.0``."""
    if isinstance(value, bool) or not isinstance(value, int):
        return f"must be an integer, got {type(value).__name__} {excerpt(value)}"
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high:,}" if high is not None else f">= {low}"
        return f"must be in {bound}, got {value:,}"
    return None


def require_number(value: Any, *, low: float = 0.0, low_open: bool = False, high: float | None = None,
                   allow_none: bool = False) -> str | None:
    """Why ``value`` is not a finite number ≥ ``low`` (> ``low`` with ``low_open``) and ≤ ``high``."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"must be a number, got {type(value).__name__} {excerpt(value)}"
    if not math.isfinite(value):
        return f"must be finite, got {value}"
    if value < low or (low_open and value == low) or (high is not None and value > high):
        bound = f"{'>' if low_open else '>='} {low:g}" + (f" and <= {high:g}" if high is not None else "")
        return f"must be {bound}, got {value:g}"
    return None
