"""Rewrite the stale console excerpts of README.md and docs/examples/*.md with the real output.

Runs the checker (``benchmarks/readme_excerpts.py``, same options) and replaces each shown line the real output
lacks by its counterpart there, aligned on the text with the figures masked; prints the lines it could not
place. Review the diff: a table whose rows were reordered, or a note written into an excerpt, needs a hand.

Usage: ``python benchmarks/readme_refresh.py [FILE.md ...] [--timeout S] [--match TEXT]``
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import readme_excerpts as excerpts  # noqa: E402  (a script beside this one, not a package)

_NUMBER = re.compile(r"[-+]?\d[\d,]*(\.\d+)?(e[-+]?\d+)?")


def _line_key(line: str) -> str:
    """What stays when a line's figures change: rules keep their corner characters, text lines lose numbers."""
    if excerpts.RULE_LINE.match(line):
        return "".join(sorted(set(line.strip())))
    return _NUMBER.sub("#", excerpts.normalise(line))


def refreshed_lines(shown: list[str], real_output: str) -> tuple[list[str], list[str]]:
    """The shown lines with each stale one replaced by its counterpart in the real output, and those left stale.

    Shown and real lines are aligned on their keys (text with the figures masked); a stale line whose key
    matches a real line at the aligned place, or that is at least 60 % similar to the real line paired with it,
    takes that real line. Trimming marks and lines already in the real output stay as they are; the count of
    lines never changes, so the excerpt keeps its trimming. An excerpt that shows the whole output (as many lines,
    no trimming mark) takes the whole real output.
    """
    real_lines = [line.rstrip() for line in real_output.splitlines()]
    while real_lines and not real_lines[-1]:
        real_lines.pop()
    if len(real_lines) == len(shown) and not any(excerpts.is_trim_mark(line) for line in shown):
        return real_lines, []  # the excerpt shows the whole output
    stale = {i for i, line in enumerate(shown) if excerpts.missing_lines([line], real_output)}
    new = list(shown)
    keys = ([_line_key(line) for line in shown], [_line_key(line) for line in real_lines])
    matcher = difflib.SequenceMatcher(None, *keys, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        for offset in range(min(i2 - i1, j2 - j1)):
            i, j = i1 + offset, j1 + offset
            if i not in stale and not (excerpts.RULE_LINE.match(shown[i]) and shown[i].strip()):
                continue
            pair = (excerpts.normalise(shown[i]), excerpts.normalise(real_lines[j]))
            if tag == "equal" or difflib.SequenceMatcher(None, *pair).ratio() >= 0.6:
                new[i] = real_lines[j]
    left = [line for i, line in enumerate(new) if i in stale and excerpts.missing_lines([line], real_output)]
    return new, left


def refresh_file(path: Path, outcomes: list[excerpts.Outcome]) -> list[str]:
    """Rewrite the stale excerpts of ``path`` in place; returns the shown lines that could not be refreshed."""
    lines = path.read_text(encoding="utf-8").splitlines()
    unresolved = []
    for outcome in outcomes:
        if outcome.excerpt.path != path or not outcome.stale:
            continue
        excerpt = outcome.excerpt
        new, left = refreshed_lines(excerpt.shown, outcome.real_output)
        start = excerpt.shown_line_no - 1
        lines[start : start + len(new)] = new
        unresolved.extend(f"{path.name}:{excerpt.line_no}: {line.strip()[:200]}" for line in left)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return unresolved


def main(argv: list[str] | None = None) -> int:
    args = excerpts.command_line(__doc__.splitlines()[0]).parse_args(argv)
    paths = args.files or excerpts.default_files()
    outcomes = excerpts.check_files(paths, args.match, args.timeout)
    print(excerpts.report(outcomes, verbose=False))
    unresolved = [line for path in paths for line in refresh_file(path, outcomes)]
    print(f"refreshed {sum(o.stale for o in outcomes)} excerpts; {len(unresolved)} lines need a hand")
    for line in unresolved:
        print(f"    {line}")
    return 1 if unresolved else 0


if __name__ == "__main__":
    raise SystemExit(main())
