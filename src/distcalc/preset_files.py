"""The YAML preset files shipped in ``distcalc/presets`` (GPUs, links, clusters): read once, looked up by
case-insensitive name, with an error that lists the valid names."""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from distcalc.errors import ConfigError
from distcalc.suggest import did_you_mean


#: libyaml's scanner and parser when PyYAML was built with them (``yaml.__with_libyaml__``), else PyYAML's
#: pure-Python ones (PyYAML README, github.com/yaml/pyyaml: with the LibYAML bindings installed, "fast
#: LibYAML-based parser" through ``Loader=yaml.CLoader``; ``CSafeLoader`` is its safe variant). Both feed the
#: same ``SafeConstructor``, so a file gives the same values either way (a test compares them on every shipped
#: preset); libyaml parses the shipped presets in about a tenth of the instructions, which was most of what
#: reading them cost ``distcalc analyze`` at start-up.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def parse_preset_yaml(text: str) -> Any:
    """The values of a shipped preset file's YAML ``text`` (``yaml.safe_load`` semantics, libyaml speed).
    Only for the files distcalc ships: a user's file goes through ``yaml.safe_load``, whose error messages
    the CLI quotes."""
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (a safe loader)


@lru_cache(maxsize=None)
def read_presets(filename: str) -> dict[str, dict[str, Any]]:
    """All entries of ``presets/<filename>`` keyed by preset name (parsed once per process)."""
    return parse_preset_yaml((resources.files("distcalc") / "presets" / filename).read_text(encoding="utf-8"))


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
