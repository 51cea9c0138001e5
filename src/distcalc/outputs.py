"""The output boundary: every file distcalc writes is checked by :func:`check_output_path` *before* the work
that produces it starts (a bench sweep is not lost to a bad ``--output`` at its end).

Rules: the suffix must be one the writer supports (:data:`PLOT_SUFFIXES`, :data:`JSON_SUFFIXES`,
:data:`CSV_SUFFIXES`) and is never appended for the user (``--plot /dev/full`` is refused, not turned into
``/dev/full.png``); the folder must already exist and be writable (distcalc never creates folders); the path
must not be a folder or a non-regular file — except an existing character device for a text output
(``--output /dev/null`` discards a bench result; a figure always needs a file name with its format). :func:`write_text` turns a late ``OSError`` (disk full) into the
same one-line error.
"""

from __future__ import annotations

import os
from pathlib import Path

from distcalc.errors import ConfigError, DistcalcError
from distcalc.inputs import PATH_CHARS, excerpt

#: Figure formats written with matplotlib's ``savefig`` (format chosen by the suffix).
PLOT_SUFFIXES = (".png", ".pdf", ".svg")
JSON_SUFFIXES = (".json",)
CSV_SUFFIXES = (".csv",)

__all__ = ["CSV_SUFFIXES", "JSON_SUFFIXES", "PLOT_SUFFIXES", "check_output_path", "write_text"]


def check_output_path(path: str | Path, option: str, suffixes: tuple[str, ...],
                      error: type[DistcalcError] = ConfigError) -> Path:
    """``path`` as a :class:`Path` if a file of one of ``suffixes`` can be written there; else ``error``
    naming ``option``, the path and what is valid."""
    try:
        target = Path(str(path)).expanduser()
        if suffixes != PLOT_SUFFIXES and target.is_char_device() and os.access(target, os.W_OK):
            return target
        return _checked(str(path), option, suffixes, error)
    except OSError as problem:  # e.g. a name too long for the file system
        raise error(f"{option} {excerpt(str(path), PATH_CHARS)}: {problem.strerror or problem}") from None


def _checked(text: str, option: str, suffixes: tuple[str, ...], error: type[DistcalcError]) -> Path:
    name = excerpt(text, PATH_CHARS)
    if not text.strip():
        raise error(f"{option}: empty file name; give a file ending in {', '.join(suffixes)}")
    target = Path(text).expanduser()
    suffix = target.suffix.lower()
    if suffix not in suffixes:
        got = f"suffix {excerpt(suffix)}" if suffix else "no suffix"
        raise error(f"{option} {name}: {got}; valid: a file name ending in {', '.join(suffixes)} "
                    "(no suffix is added)")
    if target.is_dir():
        raise error(f"{option} {name} is a folder; give a file name ending in {', '.join(suffixes)}")
    folder = target.parent
    if not folder.is_dir():
        raise error(f"{option} {name}: folder {excerpt(str(folder), PATH_CHARS)} does not exist (distcalc does not "
                    "create folders; make it first)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise error(f"{option} {name}: folder {excerpt(str(folder), PATH_CHARS)} is not writable")
    if target.exists() and (not target.is_file() or not os.access(target, os.W_OK)):
        raise error(f"{option} {name} exists and is not a writable regular file")
    return target


def write_text(path: Path, text: str, option: str, error: type[DistcalcError] = ConfigError) -> Path:
    """Write ``text`` to ``path`` (checked before); an ``OSError`` (disk full, removed folder) becomes
    ``error`` naming the option and the path."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as problem:
        raise error(f"{option} {excerpt(str(path), PATH_CHARS)}: cannot write: {problem.strerror or problem}") from None
    return path
