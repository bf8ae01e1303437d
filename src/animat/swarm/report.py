"""The swarm's replay: agents, their neighbour links, obstacles and the γ-agent, in 2D (the plane z = 0) or 3D."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from animat.viz.report import SceneBuilder, write_report
from animat.viz.run_files import read_json_or_none, read_trajectory, trajectory_keys
from animat.viz.scene import Scene, frame_indices, quat_between_z

MAX_TRAILS = 200  # agents with a trail of their own at most
TRAIL_FRAMES = 12


def recognises(run_dir: Path) -> bool:
    return "positions" in trajectory_keys(run_dir)


def _in_3d(x: np.ndarray) -> np.ndarray:
    """Points ``(..., d)`` with d in 1..3 as ``(..., 3)`` (missing coordinates 0); far-off (diverged) values as NaN."""
    x = np.asarray(x, np.float64)
    out = np.zeros(x.shape[:-1] + (3,))
    out[..., : x.shape[-1]] = x
    with np.errstate(invalid="ignore"):
        return np.where(np.abs(out) < 1e6, out, np.nan)


def neighbour_pairs(pos: np.ndarray, r: float) -> list[np.ndarray]:
    """For each frame of ``pos (F, N, 3)``: the index pairs ``(K, 2)`` of agents closer than ``r``."""
    from scipy.spatial import cKDTree

    out = []
    for p in pos:
        ok = np.isfinite(p).all(axis=1)
        keep = np.flatnonzero(ok)
        pairs = cKDTree(p[keep]).query_pairs(r, output_type="ndarray") if len(keep) > 1 else np.zeros((0, 2), int)
        out.append(keep[pairs].reshape(-1, 2))
    return out


def _obstacles(scene: Scene, obstacles: dict, dim: int, size: float) -> None:
    spheres = obstacles.get("spheres") or []
    if spheres:
        centres = _in_3d(np.array([s["center"] for s in spheres], float))
        radii = np.array([s["radius"] for s in spheres], float)
        kind = "sphere" if dim == 3 else "cylinder"  # a disc in the plane
        sizes = np.stack([radii, radii if dim == 3 else np.full_like(radii, 0.02 * size), radii], axis=1)
        scene.add_prims(
            "obstacles",
            [kind] * len(radii),
            sizes,
            centres,
            np.tile([1.0, 0, 0, 0], (len(radii), 1)),
            color=(0.5, 0.5, 0.5),
            opacity=0.6,
        )
    walls = obstacles.get("walls") or []
    if walls:
        points = _in_3d(np.array([w["point"] for w in walls], float))
        normals = _in_3d(np.array([w["normal"] for w in walls], float))
        _, _, quat = quat_between_z(points, points + normals)  # the plate's thin axis along the normal
        sizes = np.tile([size, size, 0.01 * size], (len(walls), 1))
        scene.add_prims("walls", ["box"] * len(walls), sizes, points, quat, color=(0.55, 0.5, 0.45), opacity=0.35)


def build(run_dir: Path, **_) -> Scene:
    traj = read_trajectory(run_dir, keys=("positions", "t"))
    summary = read_json_or_none(Path(run_dir) / "summary.json") or {}
    idx = frame_indices(traj["t"])
    raw = np.asarray(traj["positions"])
    if raw.ndim == 2:  # one number per agent: on a line
        raw = raw[..., None]
    dim = raw.shape[-1]
    pos = _in_3d(raw[idx])
    finite = pos[np.isfinite(pos).all(axis=-1)]
    span = float(np.ptp(finite, axis=0).max()) if len(finite) else 1.0
    params = summary.get("params") or {}
    radius = 0.12 * float(params["d"]) if "d" in params else 0.015 * max(span, 1e-6)
    centroid = np.nanmean(pos, axis=1)
    flock = "gamma" in traj or summary.get("algorithm") is not None
    start_span = float(np.nanmax(np.ptp(pos[0], axis=0))) if np.isfinite(pos[0]).any() else span
    scene = Scene(
        traj["t"][idx],
        view=(-0.9, -1.6, 0.9) if dim == 3 else (0.0, -0.35, 1.0),
        follow=centroid if flock else None,
        focus=1.2 * max(start_span, 6 * radius) if flock else None,
        ground=None if dim == 3 else -radius,
    )
    scene.add_points("agents", pos, radius=radius)
    if "r" in params:
        scene.add_links("agents", neighbour_pairs(pos, float(params["r"])))
    if pos.shape[1] <= MAX_TRAILS:
        for i in range(pos.shape[1]):
            scene.add_path(f"agent {i}", pos[:, i], color=(0.45, 0.6, 0.8), tail=TRAIL_FRAMES)
    if "gamma" in traj:
        gamma = _in_3d(np.asarray(traj["gamma"])[idx])
        scene.add_prims("γ-agent", ["sphere"], [[1.5 * radius] * 3], gamma[:, None], color=(0.84, 0.15, 0.16))
        scene.add_path("γ-agent path", gamma)
    _obstacles(scene, summary.get("obstacles") or {}, dim, max(span, 1.0))
    scene.notes.append(
        f"{pos.shape[1]} agents in {dim}D"
        + (f"; links join agents closer than r = {params['r']:g}" if "r" in params else "")
    )
    return scene


BUILDERS = (SceneBuilder("swarm", recognises, build),)

write_swarm_report = partial(write_report, builders=BUILDERS)
"""``write_swarm_report(run_dir, scene=None, **context)``: :func:`animat.viz.report.write_report` with this
system's builders."""
