"""Reading a run directory's files for its report's scene: the trajectory, JSON files, the run's config.

The scene builders themselves live in their systems (``<system>/report.py``, see
:class:`animat.viz.report.SceneBuilder`).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.errors import AnimatError


def trajectory_keys(run_dir: Path) -> set[str]:
    """Names of the arrays in ``run_dir/trajectory.npz`` (empty where there is none or it is unreadable), read without
    loading them."""
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

    source = (read_json_or_none(Path(run_dir) / "summary.json") or {}).get("source")
    for folder in (Path(run_dir), Path(source) if source else None):
        stored = read_json_or_none(folder / "config.json") if folder is not None else None
        if isinstance(stored, dict):
            try:
                return build(stored)
            except (AnimatError, TypeError, ValueError):
                pass
    return None
