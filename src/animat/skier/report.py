"""The skier's replay: every body of its MuJoCo model drawn from its geoms, the ski tracks on the snow, and the
ground under them where it is not flat (a slope or moguls, :mod:`animat.skier.terrain`: a mesh of its surface)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from animat.skier.options import TrainConfig
from animat.viz.report import SceneBuilder, write_report
from animat.viz.run_files import from_run_config, read_trajectory, trajectory_keys
from animat.viz.scene import Scene, frame_indices

TRACK_RGB = (0.35, 0.45, 0.6)
TRACK_TAIL_S = 4.0  # seconds of ski track shown behind the skier
TERRAIN_STEP = 0.25  # m between the terrain mesh's vertices
TERRAIN_MARGIN = (5.0, 3.0)  # m of terrain drawn beyond the skier's path along x and y
SNOW_RGB = (0.9, 0.93, 0.98)


def recognises(run_dir: Path) -> bool:
    keys = trajectory_keys(run_dir)
    return {"position", "quaternion"} <= keys and "wing_angles" not in keys


def _params(run_dir: Path, notes: list):
    """This run's config.json (training), its source run's (replay), else the default skier."""
    from animat.skier.model import SkierParams

    params = from_run_config(run_dir, lambda stored: TrainConfig.from_run(stored).skier_params())
    if params is not None:
        return params
    notes.append("bodies drawn with the default skier: the run directory does not say which skier skied")
    return SkierParams()


def build(run_dir: Path, params=None, **_) -> Scene:
    """``params``: the SkierParams of the run (else read from it, see :func:`_params`). Runs that kept only the
    root's pose (before reports) are drawn as a box on their path."""
    traj = read_trajectory(run_dir, keys=("t", "position", "quaternion"))
    idx = frame_indices(traj["t"])
    root = traj["position"][idx]
    scene = Scene(traj["t"][idx], follow=root, focus=2.5, ground=0.0)
    if "qpos" not in traj:
        scene.notes.append(
            "this run kept only the pelvis pose: it is drawn as a box (replay the run for the whole skier)"
        )
        scene.add_prims(
            "pelvis",
            ["box"],
            [[0.15, 0.1, 0.1]],
            root[:, None],
            traj["quaternion"][idx][:, None],
            color=(0.2, 0.4, 0.8),
        )
        scene.add_path("path", root * [1, 1, 0])
        return scene
    import mujoco

    from animat.skier.model import build_model
    from animat.viz.mujoco_bodies import add_model

    params = params if params is not None else _params(Path(run_dir), scene.notes)
    model = build_model(params)
    ids, centres = add_model(scene, "skier", model, traj["qpos"][idx].astype(float))
    lift = _add_terrain(scene, params.ground(), root) if params.terrain != "flat" else lambda p, dz: p * [1, 1, 0] + dz
    names = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, int(g)) for g in ids]
    dt = float(np.median(np.diff(scene.times))) if scene.frames > 1 else 1.0
    for side in ("left", "right"):
        if f"{side}_ski" in names:
            track = lift(centres[:, names.index(f"{side}_ski")], [0, 0, 0.002])
            scene.add_path(f"{side} ski track", track, color=TRACK_RGB, tail=max(2, int(TRACK_TAIL_S / dt)))
    scene.add_path("pelvis path", lift(root, [0, 0, 0.001]), color=(0.84, 0.15, 0.16))
    return scene


def _add_terrain(scene: Scene, terrain, root: np.ndarray):
    """Draw ``terrain`` (an :class:`animat.skier.terrain.Terrain`) around the pelvis path ``root (F, 3)`` m as a mesh
    every :data:`TERRAIN_STEP` m, the grid at its lowest point; returns ``lift(points (..., 3), dz)``: the points
    put on the surface, raised by ``dz`` m (for the tracks)."""
    (x0, y0), (x1, y1) = root[:, :2].min(axis=0) - TERRAIN_MARGIN, root[:, :2].max(axis=0) + TERRAIN_MARGIN
    x = np.arange(x0, x1 + TERRAIN_STEP, TERRAIN_STEP)
    y = np.arange(y0, y1 + TERRAIN_STEP, TERRAIN_STEP)
    gx, gy = np.meshgrid(x, y, indexing="ij")
    vertices = np.stack([gx, gy, terrain.height(gx, gy)], axis=-1).reshape(-1, 3)
    k = np.arange(len(x) * len(y)).reshape(len(x), len(y))[:-1, :-1].ravel()  # each cell's first corner
    n = len(y)
    faces = np.concatenate([np.stack([k, k + n, k + n + 1], 1), np.stack([k, k + n + 1, k + 1], 1)])
    scene.add_mesh("snow", vertices, faces, color=SNOW_RGB, compact=True)
    scene.ground = float(vertices[:, 2].min())

    def lift(points: np.ndarray, dz) -> np.ndarray:
        p = np.asarray(points, float)
        return np.stack([p[..., 0], p[..., 1], terrain.height(p[..., 0], p[..., 1])], axis=-1) + dz

    return lift


BUILDERS = (SceneBuilder("skier", recognises, build),)

write_skier_report = partial(write_report, builders=BUILDERS)
"""``write_skier_report(run_dir, scene=None, **context)``: :func:`animat.viz.report.write_report` with this
system's builders."""
