"""The YAML preset files shipped in ``distcalc/presets`` (GPUs, links, clusters): read once, looked up by
case-insensitive name, with an error that lists the valid names."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from distcalc.errors import ConfigError
from distcalc.suggest import did_you_mean


@lru_cache(maxsize=None)
def read_presets(filename: str) -> dict[str, dict[str, Any]]:
    """All entries of ``presets/<filename>`` keyed by preset name (parsed once per process)."""
    text = (resources.files("distcalc") / "presets" / filename).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def preset_names(filename: str) -> tuple[str, ...]:
    """Names of the presets in ``presets/<filename>``."""
    return tuple(read_presets(filename))


def preset_entry(filename: str, kind: str, name: str) -> tuple[str, dict[str, Any]]:
    """(normalized name, entry) of preset ``name``; :class:`ConfigError` ``unknown <kind> 'x'; presets: …``."""
    presets = read_presets(filename)
    key = str(name).strip().lower()
    if key not in presets:
        raise ConfigError(f"unknown {kind} {name!r}{did_you_mean(key, presets)}; presets: {', '.join(presets)} "
                          "(distcalc presets lists them)")
    return key, presets[key]
