"""Terminal output shared by the command lines: one rich console, the closing summary table, the JSON
mode for machine output and the progress bar.

Machine output: ``animat --json <system> <verb>`` (:func:`use_json`) prints a verb's summary as one
JSON document on stdout (:func:`print_summary`) and sends everything else this console prints
(headers, notes, progress) to stderr. Verbs whose output is data by nature print it with
:func:`print_json` in either mode. The run directory is under :data:`RUN_DIR_KEY` in every such document.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from animat import strict_json

RUN_DIR_KEY = "results"
"""The key of the run directory in every verb's JSON document (README: ``animat --json``)."""

console = Console()
_json_mode = False


def use_json(on: bool = True) -> None:
    """Switch the JSON mode on (summaries as JSON on stdout, the rest of the console on stderr) or off."""
    global _json_mode
    _json_mode = bool(on)
    console.file = sys.stderr if on else None  # None: whatever sys.stdout is when printing


def print_json(data: Any, indent: int | None = 2) -> None:
    """``data`` as one JSON document on stdout (no markup, no highlighting), strict (:mod:`animat.strict_json`: a
    NaN or an infinity is ``null``; anything not JSON as its ``str``); ``indent=None``: on one line."""
    print(strict_json.dumps(data, default=str, indent=indent))


def summary_table(summary: dict, keys: Iterable[str] | None = None) -> Table:
    """Two columns, name and value, for ``keys`` of ``summary`` (all keys when None); floats to 4
    significant digits; nested values (lists, tables) are left to summary.json."""
    table = Table(show_header=False, box=None)
    for k in summary if keys is None else keys:
        v = summary.get(k)
        if k in summary and not isinstance(v, (dict, list, tuple)):
            table.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    return table


def print_summary(summary: dict, out: Path | None, keys: Iterable[str] | None = None, *, where: str = "") -> None:
    """The closing report of a verb: ``summary``'s values for ``keys`` as a table (:func:`summary_table`),
    then where the results are (``where``: what to look at there; ``out`` None: a verb that writes nothing). In
    JSON mode: the whole summary and :data:`RUN_DIR_KEY` (the run directory) as one JSON document instead."""
    if _json_mode:
        print_json({**summary, **({RUN_DIR_KEY: str(out)} if out is not None else {})})
        return
    console.print(summary_table(summary, keys))
    if out is not None:
        # one line whatever the terminal's width: scripts (and tests) read the path from it
        line = f"results: [bold]{escape(str(out))}[/]" + (f" ({escape(where)})" if where else "")
        console.print(line, soft_wrap=True)


def progress(
    label: str = "{task.description}", fields: str = "", *, transient: bool = False, eta: bool = True
) -> Progress:
    """The progress bar of every verb: ``label``, done/total, the bar, ``fields`` (a rich format of the
    task's fields, e.g. ``"best {task.fields[best]}"``), elapsed time and, with ``eta``, the time left.
    Use as ``with progress(...) as bar: task = bar.add_task(...)``."""
    columns = [
        TextColumn(label),
        MofNCompleteColumn(),
        BarColumn(),
        *([TextColumn(fields)] if fields else []),
        TimeElapsedColumn(),
        *([TextColumn("ETA"), TimeRemainingColumn()] if eta else []),
    ]
    return Progress(*columns, console=console, transient=transient)


@contextmanager
def phase(what: str) -> Iterator[None]:
    """One step of a verb that takes seconds without a count to show (compiling, replaying, rendering, writing
    media): a spinner with ``what`` and the elapsed time while it runs (on a terminal; none where another live
    display cannot hold one, rich < 14), then the line ``what: 3.2 s``. On the console, so on stderr under
    ``--json``. Use as ``with phase("rendering media/flight.gif"): ...``."""
    from rich.errors import LiveError

    start = time.perf_counter()
    spinner = Progress(
        SpinnerColumn(), TextColumn(what, markup=False), TimeElapsedColumn(), console=console, transient=True
    )
    spinner.add_task(what, total=None)
    live = console.is_terminal  # elsewhere a live display prints only an empty line
    if live:
        try:
            spinner.start()
        except LiveError:
            live = False
    try:
        yield
    finally:
        if live:
            spinner.stop()
    console.print(f"{what}: {time.perf_counter() - start:.1f} s", markup=False, highlight=False)
