"""``presets`` as a job: every shipped model, GPU, cluster and link preset with its key numbers and source
(:mod:`distcalc.presets_catalog`), plus the collectives and topologies; ``distcalc presets --json`` and
``/api/presets`` return this object."""

from __future__ import annotations

from typing import Any, Optional

from distcalc.collective import CollectiveKind
from distcalc.errors import ConfigError
from distcalc.p2p import SEND_RECV
from distcalc.presets_catalog import PresetKind, preset_rows
from distcalc.suggest import did_you_mean
from distcalc.topology import TopologyKind


def parse_preset_kind(text: str) -> PresetKind:
    """``models``/``gpus``/``clusters``/``links`` (with a "did you mean" otherwise)."""
    valid = [k.value for k in PresetKind]
    key = text.strip().lower()
    if key not in valid:
        raise ConfigError(f"unknown preset family {text!r}{did_you_mean(key, valid)}; valid: {', '.join(valid)}")
    return PresetKind(key)


def presets_payload(kind: Optional[str] = None) -> dict[str, Any]:
    """The ``distcalc presets [KIND] --json`` object: one list of rows per preset family (``name``, ``key
    numbers``, ``source`` and the raw numbers a picker needs); without ``kind`` also the collectives and
    topologies."""
    kinds = [parse_preset_kind(kind)] if kind is not None else list(PresetKind)
    payload: dict[str, Any] = {k.value: preset_rows(k) for k in kinds}
    if kind is None:
        payload["collectives"] = [k.value for k in CollectiveKind] + [SEND_RECV]
        payload["topologies"] = [k.value for k in TopologyKind]
    return payload
