"""The rendering layer's boundary, read from the source: every figure and text table lives in
``distcalc.render``; the computation below it imports neither rich nor matplotlib nor ``render``; matplotlib (the
``plot`` extra) is imported inside functions only, so the library imports without it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import distcalc

PACKAGE = Path(distcalc.__file__).parent


def _imports(path: Path) -> list[tuple[str, bool]]:
    """(module imported, at module level?) for every import statement of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.module, id(node) in top))
    return found


def _modules() -> list[tuple[str, Path]]:
    return [(str(path.relative_to(PACKAGE)), path) for path in sorted(PACKAGE.rglob("*.py"))]


def _is(module: str, root: str) -> bool:
    return module == root or module.startswith(root + ".")


@pytest.mark.parametrize("name,path", _modules(), ids=[name for name, _ in _modules()])
def test_rendering_stays_in_render(name, path):
    layer = name.split("/")[0]
    for module, top_level in _imports(path):
        if _is(module, "matplotlib"):
            assert layer == "render", f"{name} imports {module}: figures belong in distcalc.render.plots"
            assert not top_level, f"{name} imports {module} at module level (the plot extra is optional)"
        if _is(module, "rich"):
            assert layer in ("render", "cli"), f"{name} imports {module}: text views belong in distcalc.render"
        if _is(module, "rich.table"):
            assert layer == "render", f"{name} builds a table: text views belong in distcalc.render.tables"
        if _is(module, "distcalc.render"):
            assert layer in ("render", "cli"), f"{name} imports {module}: only the CLI sits above render"


def test_the_check_reads_what_it_guards():
    render_imports = [m for name, path in _modules() if name.startswith("render/") for m, _ in _imports(path)]
    assert any(_is(m, "matplotlib") for m in render_imports) and any(_is(m, "rich") for m in render_imports)
