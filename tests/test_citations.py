"""Every citation of the specification or the design contract resolves inside the repository.

Docstrings and preset comments cite ``docs/spec/collectives.md §N[.M]`` and ``docs/design.md §N``; formula
IDs (F01, H03, T07, X02 …) name rows of the specification's formula table. This test fails on a citation
whose file, section, numbered item, formula ID or assumption (``spec A9``: the ``# A9`` line of the header of
the specification's companion file ``tests/data/reference_cases.csv``) does not exist, and on a citation still
written in an old, unresolvable form (``spec §``, a bare ``design §`` or ``design.md §``, a path outside the
repository).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(p for p in (ROOT / "src" / "distcalc").rglob("*") if p.suffix in (".py", ".yaml"))
CITATION = re.compile(r"(docs/spec/collectives\.md|docs/design\.md) §(\d+)(?:\.(\d+))?")
OLD_FORM = re.compile(r"(?<!docs/)(?<!docs/spec/)\b(spec|design|design\.md|collectives\.md)`{0,2} ?§")
FORMULA_ID = re.compile(r"\b([FTHX]\d{2})\b")
#: An assumption of the specification (``spec A9``, ``assumption A11``, ``spec A7/A8``, ``(A1)``): the numbered
#: ``# A<n>`` lines of the header of its companion file, ``tests/data/reference_cases.csv``.
ASSUMPTION = re.compile(r"(?:\b(?:spec|assumptions?) (A\d{1,2})(?:/(A\d{1,2}))?\b|\((A\d{1,2})\))")
REFERENCE_CASES = ROOT / "tests" / "data" / "reference_cases.csv"


def _sections(path: Path) -> dict[str, set[str]]:
    """Section number → its subsection numbers (``### N.M`` headings and numbered items ``M.`` under it)."""
    sections: dict[str, set[str]] = {}
    current = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"## (\d+)\.", line):
            current = match.group(1)
            sections[current] = set()
        elif match := re.match(r"### (\d+)\.(\d+)", line):
            sections.setdefault(match.group(1), set()).add(match.group(2))
        elif current and (match := re.match(r"(\d+)\. ", line)):
            sections[current].add(match.group(1))
    return sections


SECTIONS = {name: _sections(ROOT / name) for name in ("docs/spec/collectives.md", "docs/design.md")}
ASSUMPTION_IDS = set(re.findall(r"^# (A\d+) ", REFERENCE_CASES.read_text(encoding="utf-8"), flags=re.MULTILINE))
SPEC_IDS = set(FORMULA_ID.findall((ROOT / "docs/spec/collectives.md").read_text(encoding="utf-8")))


def _citations() -> list[tuple[str, str, str, str | None]]:
    found = []
    for path in SOURCES:
        for match in CITATION.finditer(path.read_text(encoding="utf-8")):
            found.append((str(path.relative_to(ROOT)), match.group(1), match.group(2), match.group(3)))
    return found


def test_there_are_citations_to_check():
    assert len(_citations()) > 30


@pytest.mark.parametrize("source, document, section, item", _citations())
def test_cited_section_exists(source, document, section, item):
    sections = SECTIONS[document]
    assert section in sections, f"{source}: {document} has no §{section}"
    if item is not None:
        assert item in sections[section], f"{source}: {document} §{section} has no item or subsection {item}"


def test_no_citation_in_an_unresolvable_form():
    stale = [f"{p.relative_to(ROOT)}: {m.group(0)!r}" for p in SOURCES
             for m in OLD_FORM.finditer(p.read_text(encoding="utf-8"))]
    assert not stale, stale


def test_cited_formula_ids_exist_in_the_specification():
    cited = {i for p in SOURCES if p.suffix == ".py" for i in FORMULA_ID.findall(p.read_text(encoding="utf-8"))}
    assert cited, "no formula IDs cited"
    assert cited <= SPEC_IDS, sorted(cited - SPEC_IDS)


def test_cited_assumptions_exist_in_the_reference_cases_header():
    cited = {i for p in SOURCES for m in ASSUMPTION.finditer(p.read_text(encoding="utf-8")) for i in m.groups() if i}
    assert cited, "no assumptions cited"
    assert cited <= ASSUMPTION_IDS, sorted(cited - ASSUMPTION_IDS)
