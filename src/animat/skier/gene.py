"""Genes: keyframed joint angles, their mirrored second half, and the joint targets over time.

A gene is an ``(n, m)`` integer matrix of joint angles in degrees: ``n`` states (default 10) by
``m = 12`` joints in the order of :data:`animat.skier.model.JOINTS` (``m = 14`` with the two-axis
hip, :func:`animat.skier.model.joint_names`). The second half of the cycle mirrors the first: state
``i + n/2`` is state ``i`` with left and right limbs swapped and the hip angles' signs flipped (both
hips turn about the same axis, so the mirror image of a left-hip angle is minus that angle on the
right; every other joint's axis is mirrored already).

Joint targets at time ``t``: ``S_t = G_i + (G_{i+1} - G_i) * mod(t, tau) / tau`` with
``i = floor(t / tau) mod n`` and ``G_n = G_0`` (the cycle repeats), ``tau = 0.5 s``.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np

from animat import runs
from animat.config import is_finite_number
from animat.errors import AnimatError
from animat.evolve.strategies import keyframe_ga
from animat.skier.model import JOINTS, SPREAD_JOINTS, joint_names, joint_ranges_deg
from animat.skier.options import TAU

N_STATES = 10
N_JOINTS = len(JOINTS)


def mirror_map(n_joints: int = N_JOINTS) -> tuple[np.ndarray, np.ndarray]:
    """(swap, flip): the column permutation that swaps left and right limbs, and the columns (hip axes,
    the same axis on both legs) whose sign the mirror flips."""
    names = joint_names(n_joints)
    swap = np.array(
        [
            names.index(j.replace("left_", "right_") if j.startswith("left_") else j.replace("right_", "left_"))
            for j in names
        ]
    )
    flip = np.array([i for i, j in enumerate(names) if "_hip" in j])
    return swap, flip


class GeneError(AnimatError):
    """A gene of the wrong shape, type or with angles out of range."""


def mirror_state(state: np.ndarray) -> np.ndarray:
    """(..., m) joint angles -> their mirror image: left/right swapped, hip signs flipped."""
    state = np.asarray(state)
    return keyframe_ga.mirror_states(state, *mirror_map(state.shape[-1]))


def mirror(genes: np.ndarray) -> np.ndarray:
    """(..., n, m) -> a copy whose states ``n/2..n-1`` mirror states ``0..n/2-1``."""
    genes = np.asarray(genes)
    n = genes.shape[-2]
    if n % 2:
        raise GeneError(f"a mirrored gene needs an even number of states, got {n}")
    return keyframe_ga.mirror(genes, *mirror_map(genes.shape[-1]))


def validate_gene(
    gene: Any, n_states: int | None = N_STATES, n_joints: int | None = N_JOINTS, *, name: str = "gene"
) -> np.ndarray:
    """``gene`` as an ``(n_states, n_joints)`` int64 array of degrees (``n_states=None``: any even number
    of states; ``n_joints=None``: 12 or 14, see :func:`animat.skier.model.joint_names`); GeneError (one
    line) if its shape, type or any angle is wrong. The mirror symmetry is not required here (see :func:`mirror`)."""
    states = "an even number of" if n_states is None else str(n_states)
    try:
        arr = np.asarray(gene, dtype=float)
    except (TypeError, ValueError):
        raise GeneError(
            f"{name} must be a {states} x {n_joints or N_JOINTS} matrix of integer angles (degrees), got something "
            "that is not numeric"
        ) from None
    allowed = (N_JOINTS, N_JOINTS + len(SPREAD_JOINTS)) if n_joints is None else (n_joints,)
    rows_ok = arr.ndim == 2 and (
        arr.shape[0] == n_states if n_states is not None else arr.shape[0] >= 2 and arr.shape[0] % 2 == 0
    )
    if not rows_ok or arr.shape[1] not in allowed:
        names = joint_names(allowed[0])
        raise GeneError(
            f"{name} has shape {arr.shape}, expected {states} states x {' or '.join(map(str, allowed))} joints "
            f"({', '.join(names)})"
        )
    names = joint_names(arr.shape[1])
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        bad = np.argwhere(~np.isfinite(arr) | (arr != np.round(arr)))[0]
        raise GeneError(
            f"{name}[{bad[0]}][{bad[1]}] ({names[bad[1]]}) = {arr[tuple(bad)]} is not an integer angle in degrees"
        )
    rng = joint_ranges_deg(arr.shape[1])
    out = (arr < rng[:, 0]) | (arr > rng[:, 1])
    if out.any():
        i, j = np.argwhere(out)[0]
        raise GeneError(
            f"{name}[{i}][{j}]: {names[j]} angle {arr[i, j]:g} deg is out of its range {rng[j, 0]}..{rng[j, 1]} deg"
        )
    return arr.astype(np.int64)


def random_genes(
    rng: np.random.Generator, population: int, n_states: int = N_STATES, n_joints: int = N_JOINTS
) -> np.ndarray:
    """(P, n, m) int64: uniform random angles in each joint's range, mirrored."""
    r = joint_ranges_deg(n_joints)
    genes = rng.integers(r[:, 0], r[:, 1] + 1, size=(population, n_states, n_joints))
    return mirror(genes)


def symmetric(states: np.ndarray) -> np.ndarray:
    """(..., m) -> a copy whose right limbs are the mirror image of the left: a pose equal to its own mirror image."""
    states = np.asarray(states)
    return keyframe_ga.symmetrise(states, *mirror_map(states.shape[-1]))


def standing_genes(
    rng: np.random.Generator,
    population: int,
    sigma_deg: float,
    n_states: int = N_STATES,
    n_joints: int = N_JOINTS,
    *,
    spread_deg: float = 0.0,
    toe_deg: float = 0.0,
    symmetric_noise: bool = True,
) -> np.ndarray:
    """(P, n, m) int64, mirrored: the standing pose (every angle 0: upright, arms hanging, legs straight;
    it stands still for 20 s; with ``spread_deg`` and ``toe_deg``, two-axis hip only, each leg spread out and its ski
    toed out that much) plus normal
    noise of ``sigma_deg`` degrees, rounded and clipped to each joint's range; the first gene is the pose itself.
    ``symmetric_noise``: the same on both sides (each state its own mirror image: a random gene whose legs move
    differently rolls over sideways within about 2 s, a bilaterally symmetric one mostly stays up); otherwise
    each side its own (on feet 0.2 m apart a skier rolls over from a 2 degree sideways sway of its hips; with the
    legs spread 5-15 degrees each, most sways of 3-10 degrees leave it standing: RESULTS.md, "Skier: V-skate")."""
    r = joint_ranges_deg(n_joints)
    pose = np.zeros(n_joints)
    if spread_deg or toe_deg:
        names = joint_names(n_joints)
        if "left_hip_spread" not in names:
            raise GeneError(
                f"a spread or toed-out stance needs the two-axis hip's genes ({N_JOINTS + len(SPREAD_JOINTS)} joints), "
                f"got {n_joints}"
            )
        for joint, deg in (("hip_spread", spread_deg), ("hip", toe_deg)):  # the mirror turns the right leg as much
            pose[names.index(f"left_{joint}")], pose[names.index(f"right_{joint}")] = deg, -deg
    noise = rng.normal(0.0, float(sigma_deg), size=(population, n_states, n_joints))
    noise[:1] = 0.0
    states = np.clip(np.rint(pose + noise), r[:, 0], r[:, 1]).astype(np.int64)
    return mirror(symmetric(states) if symmetric_noise else states)


def targets(genes: np.ndarray, t: np.ndarray, tau: float = TAU) -> np.ndarray:
    """Joint targets (degrees, float64) of genes ``(..., n, m)`` at times ``t`` (T,) s -> ``(..., T, m)``."""
    genes = np.asarray(genes, dtype=np.float64)
    n = genes.shape[-2]
    t = np.asarray(t, dtype=np.float64)
    phase = t / tau
    k = np.floor(phase)
    frac = phase - k  # mod(t, tau) / tau
    i = k.astype(np.int64) % n
    j = (i + 1) % n
    gi, gj = genes[..., i, :], genes[..., j, :]
    return gi + (gj - gi) * frac[:, None]


def controls(genes: np.ndarray, nstep: int, timestep: float, tau: float = TAU) -> np.ndarray:
    """Open-loop actuator controls (radians) for ``nstep`` steps of ``timestep`` s: ``(P, nstep, 12)``
    from genes ``(P, n, 12)``; the control of step k is the target at ``t = k * timestep``."""
    t = np.arange(nstep) * timestep
    return np.radians(targets(genes, t, tau))


def gene_to_json(gene: np.ndarray, fitness: float | None = None, extra: dict | None = None, tau: float = TAU) -> dict:
    gene = np.asarray(gene)
    names = joint_names(gene.shape[-1])
    return {
        "format": "animat-skier-gene",
        "units": "degrees",
        "tau_seconds": float(tau),
        "joints": list(names),
        "ranges_deg": {j: [int(a), int(b)] for j, (a, b) in zip(names, joint_ranges_deg(gene.shape[-1]))},
        "states": [[int(v) for v in row] for row in gene],
        "fitness": None if fitness is None or not math.isfinite(fitness) else float(fitness),
        **(extra or {}),
    }


def save_gene_json(
    path: str | os.PathLike, gene: np.ndarray, fitness: float | None = None, extra: dict | None = None, tau: float = TAU
) -> Path:
    """Write ``gene`` (degrees) with its keyframe period ``tau`` (s) as JSON (see :func:`gene_to_json`)."""
    return runs.atomic_write_json(path, gene_to_json(gene, fitness, extra, tau))


def load_gene_json(
    path: str | os.PathLike, n_states: int | None = N_STATES, n_joints: int | None = None
) -> tuple[np.ndarray, dict]:
    """Read a gene file written by :func:`save_gene_json` (or any JSON with ``states``, or a bare
    matrix): ``(gene, info)``, validated; ``info``: the file's other entries (a run's ``friction``,
    ``skier`` options, scoring settings) with ``tau`` its ``tau_seconds`` (default :data:`TAU`).
    GeneError names the file on any problem."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GeneError(f"gene file {str(path)!r} not found") from None
    except (OSError, ValueError) as exc:
        raise GeneError(f"gene file {str(path)!r} is not valid JSON: {exc}") from None
    states = data.get("states") if isinstance(data, dict) else data
    if states is None:
        raise GeneError(f"gene file {str(path)!r} has no 'states' matrix")
    tau = data.get("tau_seconds", TAU) if isinstance(data, dict) else TAU
    if not is_finite_number(tau) or not tau > 0:
        raise GeneError(f"gene file {str(path)!r}: tau_seconds must be a number > 0, got {tau!r}")
    info = {k: v for k, v in data.items() if k not in ("states", "tau_seconds")} if isinstance(data, dict) else {}
    return validate_gene(states, n_states, n_joints, name=f"gene in {path.name}"), {**info, "tau": float(tau)}
