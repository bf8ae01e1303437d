"""Checkpoints: arrays in ``.npz`` plus a JSON manifest with metadata and the npz's sha256.

Safe by default: arrays are loaded with ``allow_pickle=False`` and the checksum and every array's
shape and dtype are verified first. Writes are atomic (npz first, then its manifest); population
checkpoints go to a new name per generation (``checkpoints/gen-000050.npz`` + ``.json``) and then
``checkpoints/latest.json`` is replaced, so a crash mid-write leaves the previous checkpoint valid.
The last ``keep`` generations are kept; a newest one damaged after the fact (disk fault, torn copy)
gives way, with a warning, to the newest older one that verifies (:func:`read_checkpoint`).

The format of every system's checkpoints (the fly's and the skier's populations, the surrogate's
training state, imitate's policies); it knows nothing of what the arrays mean (genome files:
:mod:`animat.evolve.genome_file`) and imports neither JAX nor any system. Nothing is ever unpickled.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.errors import CheckpointError, CheckpointWarning

FORMAT = "animat-checkpoint"
VERSION = 1
CHECKPOINT_DIR = "checkpoints"
LATEST = "latest.json"
_GEN_RE = re.compile(r"^gen-(\d+)\.json$")
_NUMBERED_RE = re.compile(r"^(.+)-(\d+)\.json$")


def write_checkpoint(
    manifest_path: str | os.PathLike, arrays: Mapping[str, np.ndarray], kind: str, meta: Mapping[str, Any]
) -> Path:
    """Write ``<stem>.npz`` then the manifest ``manifest_path`` (``<stem>.json``), both atomically.

    ``arrays`` must be plain numeric arrays (no objects); ``meta`` JSON-serialisable. Returns the manifest path.
    """
    manifest_path = Path(manifest_path)
    npz_path = manifest_path.with_suffix(".npz")
    arrays = {k: np.asarray(v) for k, v in arrays.items()}
    for name, arr in arrays.items():
        if arr.dtype == object:
            raise TypeError(f"checkpoint array {name!r} has dtype object; only numeric arrays are stored")
    data = runs.npz_bytes(arrays)
    runs.atomic_write_bytes(npz_path, data)
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "kind": kind,
        "npz": npz_path.name,
        "sha256": runs.sha256_hex(data),
        "arrays": {k: {"shape": list(v.shape), "dtype": v.dtype.str} for k, v in arrays.items()},
        "meta": dict(meta),
    }
    runs.atomic_write_json(manifest_path, manifest, exact=True)  # a NaN loss or a -inf best resumes as itself
    return manifest_path


def _manifest_for(path: Path) -> tuple[Path, Path | None]:
    """Resolve a run dir, a checkpoints dir, ``latest.json``, a manifest or an npz to ``(manifest, pointer)``;
    ``pointer`` is the ``latest.json`` followed (None when a file was named); :class:`DamagedPointer`
    when that pointer cannot be read."""
    if path.is_dir():
        if (path / CHECKPOINT_DIR).is_dir():
            path = path / CHECKPOINT_DIR
        elif path.name != CHECKPOINT_DIR and not (path / LATEST).exists():
            raise CheckpointError(
                f"no checkpoint in {str(path)!r} (no {CHECKPOINT_DIR}/ folder: did the run stop before its first one?)"
            )
        path = path / LATEST
    if path.suffix == ".npz":
        path = path.with_suffix(".json")
    if path.name != LATEST:
        return path, None
    try:
        pointer = runs.read_json(path)
        return path.parent / str(pointer["manifest"]), path
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {str(path)!r} (file missing)") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DamagedPointer(f"checkpoint pointer {str(path)!r} is corrupt: {exc}", path) from None


def read_checkpoint(path: str | os.PathLike, kind: str | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load and verify a checkpoint; returns ``(arrays, meta)``.

    ``path``: a run directory, its ``checkpoints/`` folder (both use ``latest.json``), a manifest
    ``.json`` or its ``.npz``. Raises :class:`CheckpointError` naming the file if anything is missing,
    corrupt, of another ``kind`` or inconsistent with its manifest. Reached through ``latest.json``, a
    damaged newest checkpoint (or pointer) gives way to the newest older one in the folder that verifies
    (``<name>-<number>.json``, same ``kind``), with a :class:`~animat.errors.CheckpointWarning`; the error
    is raised only when none does.
    """
    try:
        manifest_path, pointer = _manifest_for(Path(path))
    except DamagedPointer as exc:
        manifest_path, pointer, error = exc.pointer, exc.pointer, exc
    else:
        try:
            return _read_manifest(manifest_path, kind)
        except CheckpointError as exc:
            if pointer is None:
                raise
            error = exc
    for older in _older_manifests(manifest_path, pointer):
        try:
            found = _read_manifest(older, kind)
        except CheckpointError:
            continue
        warnings.warn(f"{error}; resuming from the older {str(older)!r}", CheckpointWarning, stacklevel=2)
        return found
    raise error


class DamagedPointer(CheckpointError):
    """``latest.json`` (``pointer``) cannot be read: :func:`read_checkpoint` then tries the older checkpoints."""

    def __init__(self, message: str, pointer: Path):
        super().__init__(message)
        self.pointer = pointer


def _older_manifests(failed: Path, pointer: Path) -> list[Path]:
    """Numbered manifests (``<name>-<number>.json``) beside ``pointer``, newest first: those older than
    ``failed`` when it is one of them, else all."""
    numbered = sorted(
        (int(m.group(2)), m.group(1), p) for p in pointer.parent.glob("*.json") if (m := _NUMBERED_RE.match(p.name))
    )
    m = _NUMBERED_RE.match(failed.name)
    if m:
        numbered = [t for t in numbered if t[1] == m.group(1) and t[0] < int(m.group(2))]
    return [p for *_, p in reversed(numbered)]


def _read_manifest(manifest_path: Path, kind: str | None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Load and verify the checkpoint of one manifest (see :func:`read_checkpoint`)."""
    try:
        manifest = runs.read_json(manifest_path)
    except FileNotFoundError:
        raise CheckpointError(f"no checkpoint at {str(manifest_path)!r} (file missing)") from None
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"checkpoint manifest {str(manifest_path)!r} is corrupt: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise CheckpointError(f"{str(manifest_path)!r} is not an animat checkpoint manifest")
    if kind is not None and manifest.get("kind") != kind:
        raise CheckpointError(f"{str(manifest_path)!r} holds a {manifest.get('kind')!r} checkpoint, expected {kind!r}")
    npz_path = manifest_path.parent / str(manifest.get("npz", ""))
    try:
        data = npz_path.read_bytes()
    except OSError:
        raise CheckpointError(
            f"checkpoint data {str(npz_path)!r} is missing (named by {str(manifest_path)!r})"
        ) from None
    if runs.sha256_hex(data) != manifest.get("sha256"):
        raise CheckpointError(f"checkpoint data {str(npz_path)!r} is corrupt (sha256 does not match its manifest)")
    arrays = runs.read_npz(npz_path, data=data, what="checkpoint data")
    expected = manifest.get("arrays", {})
    if set(expected) != set(arrays):
        raise CheckpointError(
            f"checkpoint data {str(npz_path)!r} holds arrays {sorted(arrays)}, manifest lists {sorted(expected)}"
        )
    for name, spec in expected.items():
        arr = arrays[name]
        if list(arr.shape) != list(spec["shape"]) or arr.dtype.str != spec["dtype"]:
            raise CheckpointError(
                f"checkpoint array {name!r} in {str(npz_path)!r} is {arr.dtype.str}{list(arr.shape)}, "
                f"manifest says {spec['dtype']}{spec['shape']}"
            )
    return arrays, dict(manifest.get("meta", {}))


def _generations(ckpt_dir: Path) -> list[tuple[int, Path]]:
    """``(generation, manifest)`` of every ``gen-*.json`` in ``ckpt_dir``, oldest first."""
    found = []
    for p in ckpt_dir.iterdir():
        m = _GEN_RE.match(p.name)
        if m:
            found.append((int(m.group(1)), p))
    return sorted(found)


def checkpoint_name(generation: int) -> str:
    return f"gen-{int(generation):06d}.json"


def save_checkpoint(
    out_dir: str | os.PathLike,
    generation: int,
    arrays: Mapping[str, np.ndarray],
    meta: Mapping[str, Any],
    keep: int = 3,
) -> Path:
    """Write ``out_dir/checkpoints/gen-<generation>.{npz,json}``, point ``latest.json`` at it, keep the last ``keep``.

    Checkpoints of later generations (left by a run that was resumed from an earlier one, whose lineage
    this one replaces) are removed, so that neither the pruning nor :func:`read_checkpoint`'s fallback
    can pick them. Returns the manifest path.
    """
    ckpt_dir = Path(out_dir) / CHECKPOINT_DIR
    manifest = write_checkpoint(ckpt_dir / checkpoint_name(generation), arrays, "population", meta)
    runs.atomic_write_json(ckpt_dir / LATEST, {"manifest": manifest.name, "generation": int(generation)})
    found = _generations(ckpt_dir)
    stale = [path for gen, path in found if gen > int(generation)]
    if keep and keep > 0:
        stale += [path for gen, path in found if gen <= int(generation)][:-keep]
    for path in stale:
        path.unlink(missing_ok=True)
        path.with_suffix(".npz").unlink(missing_ok=True)
    return manifest


def list_checkpoints(out_dir: str | os.PathLike) -> list[Path]:
    """Manifest paths under ``out_dir/checkpoints`` (or ``out_dir`` itself), oldest generation first."""
    path = Path(out_dir)
    if (path / CHECKPOINT_DIR).is_dir():
        path = path / CHECKPOINT_DIR
    if not path.is_dir():
        return []
    return [p for _, p in _generations(path)]
