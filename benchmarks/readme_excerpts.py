"""Check that the console excerpts in README.md and docs/examples/*.md still match what distcalc prints.

An excerpt is a ``$ distcalc ...`` line inside a ```` ```console ```` (or plain) fence (continued on the next
lines when it ends with a backslash) and the output lines shown after it, up to the next ``$`` line or the end of the fence.
Every complete command is run in a shell (``distcalc`` resolved to the interpreter's own console script, so
``PYTHONPATH`` picks the sources) with ``COLUMNS`` set to the excerpt's widest line (at least 80), and every
shown output line must appear in the real output. Lines are compared after normalising: box-drawing
characters become spaces and runs of whitespace collapse, so a rich table compares cell by cell whatever
its column widths; table rules, blank lines and trimming marks (``…``) are not compared. Rich may wrap a long
cell differently; a shown table line therefore also matches when its cells are the leading cells of a real
row.

Commands that cannot run here are skipped, each with its reason: elided commands (``...``), commands that
write files or plots, start servers or torch/torchrun jobs, read files that are neither in the repository nor
shown earlier in the same markdown file by ``$ cat NAME`` (those are written out for the run), or need the
Hugging Face cache. A command that runs past the per-command timeout is reported as skipped too.

A reader's note is not compared: a line starting ``# `` and ``  # ...`` after an output line. An elided
command (``$ ... --flag``) is listed as skipped. A shown ``key value, key value`` line under a ``--json``
command is a summary; each value must equal the JSON's value of that key to the digits shown. The search's
own wall-clock figure is masked.

Usage: ``python benchmarks/readme_excerpts.py [FILE.md ...] [--timeout S] [--match TEXT] [--verbose]``
(default files: README.md and docs/examples/*.md; exit code 1 when a shown line is stale).
``benchmarks/readme_refresh.py`` (same options) rewrites the stale lines.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TIMEOUT_S = 60.0
MIN_COLUMNS = 80
WIDE_COLUMNS = 200
_BOX_CHARS = re.compile(r"[│┃┆┊║╎╏┏┓┗┛┣┫┳┻╋┡┩╇━─┌┐└┘├┤┬┴┼═╔╗╚╝╠╣╦╩╬╞╡╪╤╧╒╕╘╛]")
RULE_LINE = re.compile(r"^[\s│┃┏┓┗┛┣┫┳┻╋┡┩╇━─┌┐└┘├┤┬┴┼═╔╗╚╝╠╣╦╩╬╞╡╪╤╧╒╕╘╛]*$")
_TRAILING_COMMENT = re.compile(r"\s{2,}#.*$|\s+\(trimmed\)\s*$")
# figures that are wall-clock time of the run itself, not results: masked before comparing
_WALL_CLOCK: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(duplicates skipped [\d,]+; )[\d.]+ (m?s)\b"), r"\1<wall clock>"),
)
_OUTPUT_COMMENT = re.compile(r"(^|\s{2,})#\s.*$")
_JSON_SUMMARY = re.compile(r"^\w+ [-+]?[\d.]+(e[-+]?\d+)?(, \w+ [-+]?[\d.]+(e[-+]?\d+)?)*$")
_CAT = re.compile(r"^cat ([\w.-]+)\s*$")
_ENV_PREFIX = re.compile(r"^(?:[A-Z_]+=\S*\s+)+")
_SHELL_FENCES = ("", "console", "text", "shell", "bash", "sh")
_FILE_ARG = re.compile(r"\.(json|yaml|yml|log|csv)$")
# (reason, predicate on the command text); the first match wins
_SKIP_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("elided command (...)", re.compile(r"\.\.\.|…")),
    ("starts a web server", re.compile(r"\bdistcalc serve\b")),
    ("runs torch / multi-process benchmarks", re.compile(r"\bdistcalc bench\b|torchrun")),
    ("writes a file or a plot", re.compile(r"--output\b|--plot\b|\s>\s|\bdistcalc calibrate\b")),
    ("not a distcalc command", re.compile(r"^(?!(?:[A-Z_]+=\S*\s+)*distcalc\b)")),
)


@dataclass
class Excerpt:
    """One ``$ distcalc ...`` command shown in a markdown file and the output lines shown after it."""

    path: Path
    line_no: int
    command: str
    shown: list[str] = field(default_factory=list)
    shown_line_no: int = 0  # line number of the first shown output line
    files: dict[str, str] = field(default_factory=dict)  # files the markdown shows with ``$ cat NAME`` before it


@dataclass
class Outcome:
    """What checking one excerpt found: skipped (with why), or the shown lines missing from the real output."""

    excerpt: Excerpt
    skipped: str | None = None
    missing: list[str] = field(default_factory=list)
    run_time_s: float = 0.0
    real_output: str = ""

    @property
    def stale(self) -> bool:
        return self.skipped is None and bool(self.missing)


def parse_excerpts(path: Path) -> list[Excerpt]:
    """Every ``$ distcalc`` excerpt inside a ``console`` fence of ``path``, in file order."""
    excerpts: list[Excerpt] = []
    in_fence = False
    shell_fence = False
    current: Excerpt | None = None
    continuing = False
    shown_files: dict[str, list[str]] = {}
    cat_lines: list[str] | None = None
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.startswith("```"):
            in_fence = not in_fence
            shell_fence = in_fence and line.strip()[3:] in _SHELL_FENCES
            current, continuing, cat_lines = None, False, None
            continue
        if not shell_fence:
            continue
        if continuing and current is not None:
            current.command += " " + line.strip().rstrip("\\").strip()
            continuing = line.rstrip().endswith("\\")
            continue
        if line.startswith("$ "):
            text = line[2:]
            cat = _CAT.match(text)
            cat_lines = shown_files.setdefault(cat.group(1), []) if cat else None
            if text.startswith(("... ", "… ")):
                text = "distcalc " + text  # "the command above, plus": an elided distcalc command
            continuing = text.rstrip().endswith("\\")
            if _ENV_PREFIX.sub("", text).startswith("distcalc"):
                files = {name: "\n".join(lines) + "\n" for name, lines in shown_files.items()}
                current = Excerpt(
                    path=path, line_no=line_no, command=text.rstrip().rstrip("\\").strip(), files=files
                )
                excerpts.append(current)
            else:
                current = None
            continue
        if cat_lines is not None:
            cat_lines.append(line)
        if current is not None:
            if not current.shown:
                current.shown_line_no = line_no
            current.shown.append(line)
    for excerpt in excerpts:
        excerpt.command = _TRAILING_COMMENT.sub("", excerpt.command).strip()
    return excerpts


def skip_reason(command: str, cwd: Path = REPO_ROOT, files: tuple[str, ...] = ()) -> str | None:
    """Why ``command`` is not run here, or None when it is (``files``: names the markdown shows with ``cat``)."""
    for reason, pattern in _SKIP_RULES:
        if pattern.search(command):
            return reason
    try:
        words = shlex.split(command)
    except ValueError:
        return "cannot be parsed as a shell command"
    for previous, word in zip([""] + words, words):
        if _FILE_ARG.search(word) and not (cwd / word).exists() and not word.startswith("/") and word not in files:
            return f"needs the file {word}, which is not in the repository"
        if previous == "--model" and word.count("/") == 1 and not (cwd / word).exists():
            return f"needs {word} in the local Hugging Face cache"
    return None


def normalise(line: str) -> str:
    """A line with box-drawing characters turned into spaces, whitespace collapsed and wall-clock figures masked."""
    text = " ".join(_BOX_CHARS.sub(" ", line).split())
    for pattern, replacement in _WALL_CLOCK:
        text = pattern.sub(replacement, text)
    return text


def _without_comment(line: str) -> str:
    """An output line without the reader's note after it (``  # ...``); table lines are kept whole."""
    return line if _BOX_CHARS.search(line) else _OUTPUT_COMMENT.sub("", line)


def is_trim_mark(line: str) -> bool:
    stripped = line.strip()
    return stripped.startswith("(trimmed") or "..." in stripped or "…" in stripped


def _compared(line: str) -> bool:
    """False for blank lines, notes, table rules and the marks that say an excerpt was trimmed."""
    line = _without_comment(line)
    return bool(line.strip()) and not RULE_LINE.match(line) and not is_trim_mark(line)


def missing_lines(shown: list[str], real_output: str) -> list[str]:
    """The shown lines (compared ones only) that do not appear in ``real_output``."""
    real_lines = real_output.splitlines()
    real = {normalise(line) for line in real_lines}
    real_table_rows = [normalise(line) for line in real_lines if _BOX_CHARS.search(line)]
    missing = []
    for line in shown:
        if not _compared(line):
            continue
        wanted = normalise(_without_comment(line))
        if wanted in real:
            continue
        if _BOX_CHARS.search(line) and any(row.startswith(wanted) for row in real_table_rows):
            continue
        if _JSON_SUMMARY.match(wanted) and _json_summary_holds(wanted, real_output):
            continue
        missing.append(line)
    return missing


def _json_numbers(value: object, found: dict[str, list[float]]) -> dict[str, list[float]]:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (int, float)) and not isinstance(item, bool):
                found.setdefault(key, []).append(float(item))
            else:
                _json_numbers(item, found)
    elif isinstance(value, list):
        for item in value:
            _json_numbers(item, found)
    return found


def _json_summary_holds(summary: str, real_output: str) -> bool:
    """Whether a shown ``key value, key value`` summary of ``--json`` output matches it to the digits shown."""
    try:
        numbers = _json_numbers(json.loads(real_output), {})
    except ValueError:
        return False
    for pair in summary.split(", "):
        key, shown = pair.split(" ")
        decimals = len(shown.split(".")[1]) if "." in shown and "e" not in shown else 0
        tolerance = 0.5 * 10.0**-decimals if "e" not in shown else abs(float(shown)) * 1e-6
        if not any(abs(value - float(shown)) <= tolerance * (1 + 1e-9) for value in numbers.get(key, [])):
            return False
    return True


def _columns_for(excerpt: Excerpt) -> int:
    return max([MIN_COLUMNS] + [len(line) for line in excerpt.shown])


def _distcalc_shim(directory: Path) -> Path:
    """A ``distcalc`` script in ``directory`` that runs this interpreter's distcalc console entry point."""
    script = directory / "distcalc"
    script.write_text(f"#!{sys.executable}\nfrom distcalc.cli import main\n\nmain()\n", encoding="utf-8")
    script.chmod(0o755)
    return directory


def _workdir(directory: Path, cwd: Path, files: dict[str, str]) -> Path:
    """``directory`` with links to every entry of ``cwd`` and the files the markdown shows, written out."""
    for entry in cwd.iterdir():
        if entry.name not in files:
            (directory / entry.name).symlink_to(entry)
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory


def _run(
    command: str, columns: int, cwd: Path, timeout_s: float, files: dict[str, str] | None = None
) -> tuple[str, float]:
    """The combined stdout and stderr of ``command`` run by bash at a terminal width, and its wall time.

    With ``files`` the command runs in a scratch directory that links ``cwd``'s entries and holds those files.
    """
    with tempfile.TemporaryDirectory() as shim_dir, tempfile.TemporaryDirectory() as scratch:
        if files:
            cwd = _workdir(Path(scratch), cwd, files)
        env = dict(os.environ)
        env["PATH"] = f"{_distcalc_shim(Path(shim_dir))}{os.pathsep}{env.get('PATH', '')}"
        env["COLUMNS"] = str(columns)
        env.pop("NO_COLOR", None)
        env["TERM"] = "dumb"
        started = time.perf_counter()
        completed = subprocess.run(
            ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s
        )
        return completed.stdout + completed.stderr, time.perf_counter() - started


def check_excerpt(excerpt: Excerpt, timeout_s: float = DEFAULT_TIMEOUT_S, cwd: Path = REPO_ROOT) -> Outcome:
    """Run one excerpt's command (unless it is skipped) and compare its shown lines with the real output.

    The command runs at the excerpt's width; when lines are missing it runs again at ``WIDE_COLUMNS`` (the
    excerpt may have been captured on a wider terminal than its widest table) and the closer output is kept.
    """
    used = {name: text for name, text in excerpt.files.items() if name in excerpt.command.split()}
    reason = skip_reason(excerpt.command, cwd, tuple(used))
    if reason is not None:
        return Outcome(excerpt=excerpt, skipped=reason)
    best: Outcome | None = None
    for columns in dict.fromkeys((_columns_for(excerpt), WIDE_COLUMNS)):
        try:
            real, elapsed_s = _run(excerpt.command, columns, cwd, timeout_s, used)
        except subprocess.TimeoutExpired:
            return Outcome(excerpt=excerpt, skipped=f"ran past the {timeout_s:g} s timeout")
        outcome = Outcome(
            excerpt=excerpt, missing=missing_lines(excerpt.shown, real), run_time_s=elapsed_s, real_output=real
        )
        if best is None or len(outcome.missing) < len(best.missing):
            best = outcome
        if not best.missing:
            break
    assert best is not None
    return best


def default_files(root: Path = REPO_ROOT) -> list[Path]:
    return [root / "README.md"] + sorted((root / "docs" / "examples").glob("*.md"))


def check_files(paths: list[Path], match: str = "", timeout_s: float = DEFAULT_TIMEOUT_S) -> list[Outcome]:
    """Check every excerpt of ``paths`` whose command contains ``match``."""
    return [check_excerpt(e, timeout_s) for path in paths for e in parse_excerpts(path) if match in e.command]


def command_line(description: str) -> argparse.ArgumentParser:
    """The options the checker and the refresher share."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("files", nargs="*", type=Path, help="markdown files (default: README.md, docs/examples/*.md)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per command")
    parser.add_argument("--match", default="", help="only excerpts whose command contains this text")
    return parser


def report(outcomes: list[Outcome], verbose: bool) -> str:
    lines = []
    for outcome in outcomes:
        where = f"{outcome.excerpt.path.name}:{outcome.excerpt.line_no}"
        if outcome.skipped is not None:
            lines.append(f"skipped {where}: {outcome.skipped}: $ {outcome.excerpt.command[:120]}")
        elif outcome.missing:
            lines.append(f"STALE   {where} ({outcome.run_time_s:.1f} s): $ {outcome.excerpt.command[:120]}")
            lines.extend(f"    not in the real output: {line.strip()[:200]}" for line in outcome.missing)
            if verbose:
                lines.extend(f"    real | {line}" for line in outcome.real_output.splitlines())
        else:
            lines.append(f"ok      {where} ({outcome.run_time_s:.1f} s)")
    checked = [o for o in outcomes if o.skipped is None]
    stale = [o for o in checked if o.missing]
    lines.append(f"{len(outcomes)} excerpts: {len(checked)} checked, {len(stale)} stale, {len(outcomes) - len(checked)} skipped")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = command_line(__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print the real output of stale excerpts")
    args = parser.parse_args(argv)
    if shutil.which("bash") is None:
        print("error: bash is needed to run the excerpts", file=sys.stderr)
        return 2
    outcomes = check_files(args.files or default_files(), args.match, args.timeout)
    print(report(outcomes, args.verbose))
    return 1 if any(o.stale for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
