"""The shipped preset files parse to the same values with libyaml's parser (what distcalc uses when PyYAML
has it, for start-up speed) as with PyYAML's pure-Python one (``yaml.safe_load``)."""

from __future__ import annotations

from importlib import resources

import pytest
import yaml

from distcalc.preset_files import parse_preset_yaml

PRESETS = resources.files("distcalc") / "presets"
SHIPPED = sorted([p for p in PRESETS.iterdir() if p.name.endswith(".yaml")]
                 + [p for p in (PRESETS / "models").iterdir() if p.name.endswith(".yaml")], key=lambda p: p.name)


def test_every_preset_directory_has_files():
    assert {"gpus.yaml", "clusters.yaml", "links.yaml", "compute.yaml"} <= {p.name for p in SHIPPED}
    assert sum(1 for p in SHIPPED if p.parent.name == "models") >= 10


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_preset_parses_as_safe_load_does(path):
    text = path.read_text(encoding="utf-8")
    parsed = parse_preset_yaml(text)
    assert parsed == yaml.safe_load(text)
    assert repr(parsed) == repr(yaml.safe_load(text))  # same types (int vs float) and key order, not only ==


def test_libyaml_is_used_when_pyyaml_has_it():
    from distcalc.preset_files import SAFE_LOADER

    assert SAFE_LOADER is (yaml.CSafeLoader if yaml.__with_libyaml__ else yaml.SafeLoader)
