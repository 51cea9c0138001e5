"""docs/architecture.md says what the code is: its floor picture and its registry tables are checked here.

* §1's picture: every top-level module and package of ``distcalc`` stands on exactly one floor, and every
  module stands above every module it imports (imports anywhere in a file, ``TYPE_CHECKING`` ones included:
  they are arrows of the module picture too), so the picture is a valid layering of the real imports.
* §2.1's tables: the topology kinds and their traits (``topology.kinds.KINDS``), the pipeline schedules
  (``schedules.SCHEDULES`` with their codes, classes, modules and flags) and the collective algorithms valid on
  each topology kind at N = 64 (``collective.registry.valid_algorithms``, as ``distcalc topologies`` lists
  them) are the registries' contents, row for row.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from distcalc.collective.registry import valid_algorithms
from distcalc.collective.types import CollectiveKind
from distcalc.modes import Schedule
from distcalc.schedules import SCHEDULES
from distcalc.topology import make_topology
from distcalc.topology.kinds import KINDS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "distcalc"
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
YES, NO = "yes", "—"


def _flag(value: bool) -> str:
    return YES if value else NO


# --- §1: the floor picture ------------------------------------------------------------------------------------

def _picture() -> dict[str, int]:
    """Entry (``traffic``, ``analyze/``) → its floor in §1's picture; a name listed twice fails."""
    block = DOC.split("## 1. Layers", 1)[1].split("```", 2)[1]
    floors: dict[str, int] = {}
    floor = None
    for line in block.splitlines():
        if match := re.match(r"floor\s+(\d+)\s", line):
            floor = int(match.group(1))
            line = line[match.end():]
        names = re.split(r"\s{3,}", line.strip(), maxsplit=1)[0].split()  # names, then 3+ spaces, then words
        for name in names:
            assert name not in floors, f"{name} stands on two floors of the picture"
            assert floor is not None
            floors[name] = floor
    return floors


def _entry(path: Path) -> str:
    parts = path.relative_to(PACKAGE).parts
    return parts[0] + "/" if len(parts) > 1 else path.stem


def _target(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "distcalc" or len(parts) < 2:
        return None
    return parts[1] + "/" if (PACKAGE / parts[1]).is_dir() else parts[1]


def _imports() -> dict[str, set[str]]:
    """Entry → the other entries its files import (absolute imports of ``distcalc.…``)."""
    arrows: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent == PACKAGE and path.name in ("__init__.py", "__main__.py"):
            continue
        entry = _entry(path)
        targets = arrows.setdefault(entry, set())
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                modules = ([f"distcalc.{alias.name}" for alias in node.names] if node.module == "distcalc"
                           else [node.module])
            else:
                continue
            targets.update(t for m in modules if (t := _target(m)) is not None and t != entry)
    return arrows


def test_the_picture_names_every_module_once():
    listed, actual = set(_picture()), set(_imports())
    assert not actual - listed, f"modules missing from docs/architecture.md §1: {sorted(actual - listed)}"
    assert not listed - actual, f"§1 names modules that do not exist: {sorted(listed - actual)}"


def test_every_module_stands_above_what_it_imports():
    floors = _picture()
    wrong = [f"{src} (floor {floors[src]}) imports {dst} (floor {floors[dst]})"
             for src, targets in _imports().items() for dst in sorted(targets)
             if src in floors and dst in floors and floors[src] <= floors[dst]]
    assert not wrong, wrong


# --- §2.1: the registries ----------------------------------------------------------------------------------------

def _table(first_header: str) -> list[list[str]]:
    """The body rows of the markdown table whose header row starts with ``| first_header |``."""
    lines = DOC.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| {first_header} |"))
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[0:1] + rows[2:]  # header, then the body (the |---| rule dropped)


def _name(cell: str) -> str:
    return cell.strip("`")


def test_topology_kinds_table_is_the_registry():
    header, *body = _table("kind")
    assert header == ["kind", "direct", "wraparound", "shaped", "`--gpus-per-node`", "two-tier",
                      "in-network reduction"]
    expected = [[kind.value, _flag(t.direct), _flag(t.wraparound), _flag(t.shaped), t.node_option or NO,
                 _flag(t.two_tier), _flag(t.in_network_reduction)] for kind, t in KINDS.items()]
    assert [[_name(row[0]), *row[1:]] for row in body] == expected


def test_pipeline_schedules_table_is_the_registry():
    header, *body = _table("schedule")
    assert header == ["schedule", "code", "class (module)", "executed", "split backward", "V-shaped",
                      "parameter copies"]
    expected = []
    for s in sorted(SCHEDULES.values(), key=lambda s: s.code):
        module = type(s).__module__.rsplit(".", 1)[1]
        expected.append([s.name, str(s.code), f"`{type(s).__name__}` (`schedules/{module}.py`)",
                         _flag(bool(Schedule.executed(s.code))), _flag(s.split_backward), _flag(s.v_shape),
                         str(s.parameter_copies)])
    assert [[_name(row[0]), *row[1:]] for row in body] == expected


def _topology_at_64(kind):
    traits = KINDS[kind]
    extra = {"gpus_per_node": 8} if traits.node_option else {}
    if traits.in_network_reduction:
        extra["in_network_reduction"] = True
    return make_topology(kind, 64, **extra)


def test_collective_algorithms_table_is_the_registry():
    header, *body = _table("collective")
    assert [_name(cell) for cell in header[1:]] == [kind.value for kind in KINDS]
    expected = [[c.value, *(", ".join(a.value for a in valid_algorithms(c, _topology_at_64(kind))) for kind in KINDS)]
                for c in CollectiveKind]
    assert body == expected


@pytest.mark.parametrize("path", ["docs/architecture.md"])
def test_the_page_names_files_that_exist(path):
    """Every ``path/to/file.py`` the page names in backquotes (relative to src/distcalc, or to the repository
    for docs/ and tests/ and benchmarks/) exists."""
    missing = []
    for name in re.findall(r"`([\w/]+\.(?:py|md))`", (ROOT / path).read_text(encoding="utf-8")):
        if "my_" in name:  # the walk-throughs' hypothetical new module
            continue
        base = ROOT if name.split("/")[0] in ("docs", "tests", "benchmarks") else PACKAGE
        if not (base / name).exists():
            missing.append(name)
    assert not missing, missing
