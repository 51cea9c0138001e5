"""The command line's start-up: Python's cyclic garbage collector paused while modules are imported.

Importing a module creates long-lived objects (classes, functions, tables, compiled patterns) and almost no
garbage, yet CPython's collector runs every 700 allocations (``gc.get_threshold()``) and walks again every
object that survived the earlier runs each time an older generation fills up: work that finds nothing while the
command line imports its dependencies and its cost model. The Python documentation names both remedies
(docs.python.org/3/library/gc.html): ``gc.disable()`` where a program creates no reference cycles, and
``gc.freeze()``, which moves the objects that exist so far into a permanent generation that later collections
skip. :func:`collection_paused` does the first around a block of imports and puts the collector back as it
found it. In the console script's own process (:func:`distcalc.cli.main`, which ends with its command) the
imported objects are also frozen, at start and after each paused block, so that the collections of the
command's work do not walk them; a program that only imports :mod:`distcalc.cli` (tests, the web server)
never has anything frozen. Nothing computed changes, only when the collector runs.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_state = {"freeze": False}  # True once the console script's process has started (command_line_process)


@contextmanager
def collection_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the ``with`` block (imports); the collector enabled again after it
    if it was enabled before, and what the block created frozen when this is the console script's process."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _state["freeze"]:
            gc.freeze()
        if enabled:
            gc.enable()


def command_line_process() -> None:
    """Mark this process as the console script's (it ends with the command) and freeze what it imported so
    far: the frozen objects are skipped by every later collection and never freed."""
    _state["freeze"] = True
    gc.freeze()
