"""Terminal output shared by the command lines: one rich console and the closing summary table."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from rich.console import Console
from rich.table import Table

console = Console()


def print_summary(summary: dict, out: Path, keys: Iterable[str] | None = None) -> None:
    """Print ``summary``'s values for ``keys`` (all keys when None) as a table, then where results are."""
    table = Table(show_header=False, box=None)
    for k in summary if keys is None else keys:
        if k in summary:
            v = summary[k]
            table.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
    console.print(table)
    console.print(f"results: [bold]{out}[/]")
