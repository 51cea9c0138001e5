"""Error messages of a job request: run a unit parser with the option named, write one pydantic error as
``field: what is wrong (got value)``, and find the request fields a message blames (the web page marks them)."""

from __future__ import annotations

import re
from typing import Any

from distcalc.errors import DistcalcError
from distcalc.inputs import excerpt
from distcalc.units import require_unit

#: Words messages use for a field instead of its name.
FIELD_WORDS = {"kind": "collective", "gpu": "GPU"}


def blamed_fields(message: str, fields: Any) -> list[str]:
    """Request fields an error message names, in the order it names them: ``tp(3)``, ``--seq-len``,
    ``invalid --zero``, ``unknown model``/``cluster``/``collective`` …"""
    found: list[tuple[int, str]] = []
    for name in fields:
        word = FIELD_WORDS.get(name, name)
        patterns = (rf"\b{name}\(", rf"--{name.replace('_', '-')}\b", rf"\bunknown {word}\b", rf"\b{name} '")
        positions = [m.start() for p in patterns for m in re.finditer(p, message)]
        if positions:
            found.append((min(positions), name))
    return [name for _, name in sorted(found)]


_UNIT_KINDS = {"parse_rate": "rate", "parse_size": "size", "parse_size_range": "size"}


def parse_option(parser: Any, text: str, option: str) -> Any:
    """Run a unit parser on an option value; on error re-raise the same error type with the option named
    (``--size: invalid size '-1': ...``). A bare number too small to be bytes (``--bandwidth 400``) is refused
    (:func:`distcalc.units.require_unit`)."""
    try:
        kind = _UNIT_KINDS.get(getattr(parser, "__name__", ""))
        if kind is not None:
            require_unit(text, kind)
        return parser(text)
    except DistcalcError as error:
        raise type(error)(f"{option}: {error}") from None


def validation_item_message(item: dict[str, Any]) -> str:
    """One pydantic error as ``field: what is wrong (got value)`` (``body``, FastAPI's prefix, left out)."""
    location = ".".join(str(x) for x in item.get("loc", ()) if x != "body")
    return f"{location}: {item.get('msg')} (got {excerpt(item.get('input'))})"
