"""Trained artefacts of the project's own making that ship with the package, named ``pretrained:NAME``.

Each is a folder ``animat/pretrained/NAME/`` holding what the verb that reads it expects (a run
directory's files: ``config.json`` and ``best_genome.npz``, a steering directory, a policy) and a
``PROVENANCE.md`` (the command, seed, commit, wall time and the figures it reached). Verbs that take a
run directory accept ``pretrained:NAME`` in its place through :func:`resolve`.
"""

from __future__ import annotations

from pathlib import Path

from animat.errors import CheckpointError

PREFIX = "pretrained:"
ROOT = Path(__file__).parent


def available() -> list[str]:
    """Names of the artefacts shipped with this installation."""
    return sorted(p.name for p in ROOT.iterdir() if p.is_dir() and (p / "PROVENANCE.md").exists())


def resolve(source: str | Path) -> Path:
    """``"pretrained:NAME"`` -> the shipped folder; any other source is returned as a Path unchanged.
    Raises CheckpointError (one line, naming what is shipped) for an unknown name."""
    text = str(source)
    if not text.startswith(PREFIX):
        return Path(source)
    name = text[len(PREFIX) :]
    folder = ROOT / name
    if not name or "/" in name or "\\" in name or name.startswith(".") or not (folder / "PROVENANCE.md").exists():
        shipped = ", ".join(PREFIX + n for n in available()) or "none"
        raise CheckpointError(f"no pretrained artefact {text!r} in this installation (shipped: {shipped})")
    return folder
