"""The README's console excerpts stay true: a handful of quick ones are run and compared with the real output.

``benchmarks/readme_excerpts.py`` checks every excerpt of README.md and docs/examples/*.md (about a minute);
here a fast subset (a few seconds) runs on every ``make test``, and the checker itself is shown to catch an
edited figure, a missing row and a wrong error message.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
_SPEC = importlib.util.spec_from_file_location("readme_excerpts", REPO_ROOT / "benchmarks" / "readme_excerpts.py")
assert _SPEC is not None and _SPEC.loader is not None
readme_excerpts = importlib.util.module_from_spec(_SPEC)
sys.modules["readme_excerpts"] = readme_excerpts
_SPEC.loader.exec_module(readme_excerpts)
_REFRESH_SPEC = importlib.util.spec_from_file_location("readme_refresh", REPO_ROOT / "benchmarks" / "readme_refresh.py")
assert _REFRESH_SPEC is not None and _REFRESH_SPEC.loader is not None
readme_refresh = importlib.util.module_from_spec(_REFRESH_SPEC)
_REFRESH_SPEC.loader.exec_module(readme_refresh)

# (file, the excerpt's command as the checker reads it, or its start when not exact): quick commands covering analyze, memory errors,
# a run file, collective, simulate, search and validate output
FAST_EXCERPTS = (
    ("README.md", "distcalc analyze"),
    ("README.md", "distcalc memory --model llama3-8x"),
    ("README.md", "distcalc analyze --config run.yaml"),  # run.yaml: the file the README shows with `cat`
    ("README.md", "distcalc collective all-reduce --topology hierarchical --gpus 64 --gpus-per-node 8 --size 1GiB"),
    ("README.md", "distcalc simulate all-reduce --topology torus --gpus 16 --size 1MiB --bandwidth 100GB/s"),
    ("README.md", "distcalc search --model gpt3-175b --cluster dgx-a100 --gpus 64 --global-batch 64 --seq-len 2048 --top 5"),
    ("README.md", "distcalc validate --set korthikanti-table4"),
    ("docs/examples/memory.md", "distcalc memory --model llama3-70b --gpu h100-sxm --gpus 64 --tp 8 --pp 4"),
)
TIMEOUT_S = 60.0


def _excerpt(file_name: str, command_start: str):
    path = REPO_ROOT / file_name
    excerpts = readme_excerpts.parse_excerpts(path)
    found = [e for e in excerpts if e.command == command_start] or [
        e for e in excerpts if e.command.startswith(command_start)
    ]
    assert found, f"{file_name} has no console excerpt starting '$ {command_start}' (update FAST_EXCERPTS)"
    return found[0]


@pytest.mark.parametrize(("file_name", "command_start"), FAST_EXCERPTS, ids=[c[:40] for _, c in FAST_EXCERPTS])
def test_fast_excerpt_matches_real_output(file_name: str, command_start: str) -> None:
    excerpt = _excerpt(file_name, command_start)
    outcome = readme_excerpts.check_excerpt(excerpt, TIMEOUT_S)
    assert outcome.skipped is None, outcome.skipped
    assert excerpt.shown, "the excerpt shows no output"
    assert not outcome.missing, (
        f"{file_name}:{excerpt.line_no} is stale; refresh it with "
        f"`python benchmarks/readme_refresh.py {file_name} --match '{command_start[:40]}'`:\n"
        + "\n".join(outcome.missing)
    )


def _edited_copy(tmp_path: Path, edit) -> tuple[Path, object]:
    """The built-in example's excerpt, edited by ``edit(lines) -> lines``, in a markdown file of its own."""
    excerpt = _excerpt("README.md", "distcalc analyze")
    text = "```console\n$ distcalc analyze\n" + "\n".join(edit(list(excerpt.shown))) + "\n```\n"
    path = tmp_path / "edited.md"
    path.write_text(text, encoding="utf-8")
    (edited,) = readme_excerpts.parse_excerpts(path)
    return path, edited


def test_checker_catches_an_edited_figure(tmp_path: Path) -> None:
    def bump_step_time(lines: list[str]) -> list[str]:
        index = next(i for i, line in enumerate(lines) if line.startswith("step "))
        figure = lines[index].split()[1]
        lines[index] = lines[index].replace(figure, f"{float(figure) + 0.01:.2f}", 1)
        return lines

    _, edited = _edited_copy(tmp_path, bump_step_time)
    outcome = readme_excerpts.check_excerpt(edited, TIMEOUT_S)
    assert [line.split()[0] for line in outcome.missing] == ["step"]
    assert outcome.stale


def test_checker_catches_a_changed_table_cell_and_refreshes_it(tmp_path: Path) -> None:
    def change_cell(lines: list[str]) -> list[str]:
        index = next(i for i, line in enumerate(lines) if line.startswith("│ PP send/recv"))
        lines[index] = lines[index].replace("PP send/recv", "PP send/revc")
        return lines

    path, edited = _edited_copy(tmp_path, change_cell)
    outcome = readme_excerpts.check_excerpt(edited, TIMEOUT_S)
    assert len(outcome.missing) == 1 and "send/revc" in outcome.missing[0]
    assert readme_refresh.refresh_file(path, [outcome]) == []
    assert "send/recv" in path.read_text(encoding="utf-8")
    (again,) = readme_excerpts.parse_excerpts(path)
    assert not readme_excerpts.check_excerpt(again, TIMEOUT_S).missing


def test_parse_joins_continued_commands_and_drops_notes(tmp_path: Path) -> None:
    path = tmp_path / "doc.md"
    path.write_text(
        "text\n```console\n$ distcalc memory --model llama3-8b \\\n    --gpus 8      # trimmed\nworst stage 0\n"
        "# a note\n…\n$ cat run.yaml\nmodel: x\n$ ... --tp 2\nstep 1 s\n```\n```python\n$ distcalc analyze\n```\n",
        encoding="utf-8",
    )
    first, elided = readme_excerpts.parse_excerpts(path)
    assert first.command == "distcalc memory --model llama3-8b --gpus 8"
    assert first.shown == ["worst stage 0", "# a note", "…"]
    assert readme_excerpts.missing_lines(first.shown, "worst stage 0\n") == []
    assert elided.command == "distcalc ... --tp 2"
    assert readme_excerpts.skip_reason(elided.command) == "elided command (...)"


@pytest.mark.parametrize(
    ("command", "reason_start"),
    [
        ("distcalc serve", "starts a web server"),
        ("distcalc bench collectives --nproc 4", "runs torch"),
        ("distcalc search --top 1 --output x.csv", "writes a file"),
        ("distcalc analyze --config no-such-run.yaml", "needs the file no-such-run.yaml"),
        ("distcalc memory --model owner/not-cached", "needs owner/not-cached in the local Hugging Face cache"),
        ("python benchmarks/search.py", "not a distcalc command"),
    ],
)
def test_skip_reasons(command: str, reason_start: str) -> None:
    reason = readme_excerpts.skip_reason(command)
    assert reason is not None and reason.startswith(reason_start)


def test_json_summary_is_checked_to_the_digits_shown() -> None:
    real = '{"step_time_s": 11.458381, "time_breakdown": {"tp_exposed_s": 2.25505}}'
    assert readme_excerpts.missing_lines(["step_time_s 11.458, tp_exposed_s 2.255"], real) == []
    assert readme_excerpts.missing_lines(["step_time_s 11.468, tp_exposed_s 2.255"], real) != []


def test_search_wall_clock_is_not_compared() -> None:
    shown = ["347,592, oom 37,795; equivalent duplicates skipped 30,348; 0.130 s"]
    assert readme_excerpts.missing_lines(shown, "347,592, oom 37,795; equivalent duplicates skipped 30,348; 0.9 s") == []
    assert readme_excerpts.missing_lines(shown, "347,592, oom 37,796; equivalent duplicates skipped 30,348; 0.1 s") != []
