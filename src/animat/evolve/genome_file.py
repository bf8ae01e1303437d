"""Genome files: one :class:`~animat.evolve.genome.Genome` and its fitness as an :mod:`animat.checkpoint`
pair of kind ``genome`` (``<stem>.npz`` genes + ``<stem>.json`` layers, activations, fitness, extra,
sha256), and the pickle export for tools of the original project (written, never read back).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from animat import runs
from animat.checkpoint import read_checkpoint, write_checkpoint
from animat.errors import CheckpointError
from animat.evolve.genome import Genome


class SavedGenome(NamedTuple):
    genome: Genome
    fitness: float
    extra: dict


def _genome_manifest_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_suffix(".json") if path.suffix in (".npz", ".json") else path.with_name(path.name + ".json")


def save_genome(
    path: str | os.PathLike, genome: Genome, fitness: float, extra: Mapping[str, Any] | None = None
) -> Path:
    """Save one genome as ``<stem>.npz`` (genes) + ``<stem>.json`` (layers, activations, fitness, extra, sha256).

    ``path`` may end in ``.npz``, ``.json`` or have no suffix. Returns the npz path.
    """
    manifest = _genome_manifest_path(path)
    meta = {
        "layers": list(genome.layers),
        "activations": list(genome.activations),
        "fitness": float(fitness) if np.isfinite(fitness) else None,
        "extra": dict(extra or {}),
    }
    write_checkpoint(manifest, {"genes": genome.genes}, "genome", meta)
    return manifest.with_suffix(".npz")


def load_genome(path: str | os.PathLike) -> SavedGenome:
    """Load a genome saved by :func:`save_genome` (checksum verified): ``(genome, fitness, extra)``."""
    manifest = _genome_manifest_path(path)
    arrays, meta = read_checkpoint(manifest, kind="genome")
    try:
        genome = Genome(tuple(meta["layers"]), arrays["genes"], tuple(meta["activations"]))
    except (KeyError, ValueError, TypeError) as exc:
        raise CheckpointError(f"genome file {str(manifest)!r} is inconsistent: {exc}") from None
    fitness = meta.get("fitness")
    return SavedGenome(genome, float("nan") if fitness is None else float(fitness), dict(meta.get("extra", {})))


def export_pickle(genome: Genome, path: str | os.PathLike) -> Path:
    """Write a pickle of ``{"layers", "activations", "params": {"W1": ..., "b1": ...}, "genes"}`` (plain
    lists/NumPy arrays) for tools of the original project. Never read back by this package."""
    obj = {
        "layers": list(genome.layers),
        "activations": list(genome.activations),
        "params": {k: np.array(v) for k, v in genome.params.items()},
        "genes": np.array(genome.genes),
    }
    return runs.atomic_write_bytes(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))
