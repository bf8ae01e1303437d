"""Scene builders for report.html, one module per system.

Each module has ``recognises(run_dir) -> bool`` (is this one of my run directories?) and
``build(run_dir, **context) -> Scene | None`` (the replay from the directory's files; ``context``
holds what the verb that wrote the directory has in memory, such as model parameters). A builder
imports its system's package only inside ``build``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any, Callable

import numpy as np

from animat import runs


def trajectory_keys(run_dir: Path) -> set[str]:
    """Names of the arrays in ``run_dir/trajectory.npz`` (empty where there is none or it is unreadable), read without loading them."""
    path = Path(run_dir) / "trajectory.npz"
    try:
        with zipfile.ZipFile(path) as z:
            return {n[:-4] for n in z.namelist() if n.endswith(".npy")}
    except (OSError, zipfile.BadZipFile):
        return set()


def read_trajectory(run_dir: Path, keys=()) -> dict[str, np.ndarray]:
    return runs.read_npz(Path(run_dir) / "trajectory.npz", keys=keys, what="trajectory")


def read_json_or_none(path: Path):
    try:
        return runs.read_json(path) if Path(path).is_file() else None
    except (OSError, ValueError):
        return None


def from_run_config(run_dir: Path, build: Callable[[dict], Any]) -> Any | None:
    """``build(config)`` of this run's config.json (a training run) or else of the run its summary names as
    ``source`` (a replay of it); None where neither holds a config that ``build`` accepts."""
    from animat.errors import AnimatError

    source = (read_json_or_none(Path(run_dir) / "summary.json") or {}).get("source")
    for folder in (Path(run_dir), Path(source) if source else None):
        stored = read_json_or_none(folder / "config.json") if folder is not None else None
        if isinstance(stored, dict):
            try:
                return build(stored)
            except (AnimatError, TypeError, ValueError):
                pass
    return None


def box_triangles() -> np.ndarray:
    """Triangles ``(12, 3)`` of a box whose 8 corners are indexed 4*ix + 2*iy + iz (0 = minus side)."""
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.uint32)
