"""Every geom of a MuJoCo model, posed frame by frame from ``qpos``, as the replay's primitives."""

from __future__ import annotations

import mujoco
import numpy as np

KINDS = {
    int(mujoco.mjtGeom.mjGEOM_BOX): "box",
    int(mujoco.mjtGeom.mjGEOM_SPHERE): "sphere",
    int(mujoco.mjtGeom.mjGEOM_CAPSULE): "capsule",
    int(mujoco.mjtGeom.mjGEOM_CYLINDER): "cylinder",
    int(mujoco.mjtGeom.mjGEOM_ELLIPSOID): "ellipsoid",
}


def body_geoms(model: mujoco.MjModel) -> np.ndarray:
    """Ids of the geoms the replay draws: boxes, spheres, capsules, cylinders and ellipsoids (planes, meshes and height
    fields left out)."""
    return np.array([g for g in range(model.ngeom) if int(model.geom_type[g]) in KINDS], int)


def geom_colors(model: mujoco.MjModel, ids: np.ndarray) -> np.ndarray:
    """RGBA ``(G, 4)`` in [0, 1] of geoms ``ids``: their material's where they have one, else their own."""
    return np.array(
        [model.mat_rgba[model.geom_matid[g]] if model.geom_matid[g] >= 0 else model.geom_rgba[g] for g in ids],
        np.float32,
    ).reshape(-1, 4)


def geom_poses(model: mujoco.MjModel, qpos: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World centres ``(F, G, 3)`` m and quaternions ``(F, G, 4)`` [w, x, y, z] of geoms ``ids`` at the poses
    ``qpos (F, nq)`` (forward kinematics only: nothing is simulated)."""
    data = mujoco.MjData(model)
    pos = np.zeros((len(qpos), len(ids), 3), np.float32)
    quat = np.zeros((len(qpos), len(ids), 4), np.float32)
    q = np.zeros(4)
    for f, qp in enumerate(qpos):
        data.qpos[:] = qp
        mujoco.mj_kinematics(model, data)
        pos[f] = data.geom_xpos[ids]
        for k, g in enumerate(ids):
            mujoco.mju_mat2Quat(q, data.geom_xmat[g])
            quat[f, k] = q
    return pos, quat


def add_model(
    scene,
    name: str,
    model: mujoco.MjModel,
    qpos: np.ndarray,
    *,
    offset=(0.0, 0.0, 0.0),
    opacity: float = 1.0,
    tint: tuple | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Add the geoms of ``model`` at poses ``qpos (F, nq)`` (moved by ``offset`` m) to ``scene``; ``tint`` RGB replaces
    their colours. Returns the geom ids and their centres ``(F, G, 3)``."""
    ids = body_geoms(model)
    pos, quat = geom_poses(model, qpos, ids)
    pos += np.asarray(offset, np.float32)
    colors = geom_colors(model, ids)
    if tint is not None:
        colors[:, :3] = tint
    kinds = [KINDS[int(model.geom_type[g])] for g in ids]
    sizes = np.array([model.geom_size[g] for g in ids], np.float32)
    scene.add_prims(name, kinds, sizes, pos, quat, colors=colors, opacity=opacity)
    return ids, pos
