"""The humanoid's collision shapes as spheres and capsules, and their placement from body frames.

Bodies are in skeleton order (root, chest, neck, right hip, knee, ankle, shoulder, elbow, wrist, then the
left ones: DeepMimic's joint order; the MuJoCo model numbers them otherwise, :func:`body_ids`). A body frame is
its position (3,) m and rotation (4,) (w, x, y, z), as MuJoCo's ``xpos``/``xquat``. The shapes are the character file's
(:mod:`animat.character.model`): a sphere of diameter ``Param0``; a capsule of diameter ``Param0`` whose straight
part, ``Param1`` long, lies along the body's z (DeepMimic's y); a box (the feet) is taken as the capsule along its
longest side with the radius of its thinnest half-extent, so that the capsule lies inside the box.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np

from animat import quaternions as quat
from animat.character.clip import vec_dm_to_zup


@dataclass(frozen=True)
class BodyShapes:
    """Shapes in their bodies' frames: spheres ``sphere_body`` (S,) int, ``sphere_centre`` (S, 3) m,
    ``sphere_radius`` (S,) m; capsules ``capsule_body`` (C,) int, ends ``capsule_a``/``capsule_b`` (C, 3) m,
    ``capsule_radius`` (C,) m."""

    sphere_body: np.ndarray
    sphere_centre: np.ndarray
    sphere_radius: np.ndarray
    capsule_body: np.ndarray
    capsule_a: np.ndarray
    capsule_b: np.ndarray
    capsule_radius: np.ndarray


@cache
def body_shapes() -> BodyShapes:
    """The shapes of the transcribed humanoid3d (:func:`animat.character.model.default_skeleton`)."""
    from animat.character.model import default_skeleton

    spheres, capsules = [], []
    for i, bd in enumerate(default_skeleton().bodies):
        centre = vec_dm_to_zup(bd.offset)
        if bd.shape == "sphere":
            spheres.append((i, centre, bd.params[0] / 2))
            continue
        if bd.shape == "capsule":
            axis, half, radius = np.array([0.0, 0.0, 1.0]), bd.params[1] / 2, bd.params[0] / 2
        else:  # box: its longest side, the thinnest half-extent as the radius
            halves = np.abs(vec_dm_to_zup(bd.params)) / 2
            long = int(np.argmax(halves))
            axis, radius = np.eye(3)[long], float(np.min(halves))
            half = float(halves[long]) - radius
        capsules.append((i, centre - half * axis, centre + half * axis, radius))
    return BodyShapes(
        np.array([s[0] for s in spheres]),
        np.array([s[1] for s in spheres]),
        np.array([s[2] for s in spheres]),
        np.array([c[0] for c in capsules]),
        np.array([c[1] for c in capsules]),
        np.array([c[2] for c in capsules]),
        np.array([c[3] for c in capsules]),
    )


def body_ids(model) -> np.ndarray:
    """(15,) int: the MuJoCo body ids of the skeleton's bodies in skeleton order (by name: MuJoCo numbers the bodies
    depth first, the chest's arms before the legs)."""
    import mujoco

    from animat.character.model import default_skeleton

    return np.array([mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, b.name) for b in default_skeleton().bodies])


def body_frames(data, bodies: np.ndarray) -> np.ndarray:
    """(15 · 7,) float32: the frames of the skeleton's bodies ``bodies`` (:func:`body_ids`) in a MuJoCo ``data`` whose
    kinematics are current, each its position (3,) m then rotation (4,) (w, x, y, z): what a garment on the
    character reads each frame (:mod:`animat.character.wear`)."""
    return np.concatenate([data.xpos[bodies], data.xquat[bodies]], axis=1).ravel().astype(np.float32)


def place_shapes(
    pos: np.ndarray, rot: np.ndarray, shapes: BodyShapes | None = None, pad: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """The shapes of bodies at frames ``pos`` (B, 3) m, ``rot`` (B, 4) in the frames' own coordinates:
    spheres (S, 4) ``[centre, radius]`` and capsules (C, 7) ``[a, b, radius]`` in metres, float32, every radius
    grown by ``pad`` m (e.g. the cloth's contact radius)."""
    sh = shapes or body_shapes()
    pos, rot = np.asarray(pos, np.float64), np.asarray(rot, np.float64)

    def at(body: np.ndarray, local: np.ndarray) -> np.ndarray:
        return quat.rotate(rot[body], local) + pos[body]

    spheres = np.concatenate([at(sh.sphere_body, sh.sphere_centre), sh.sphere_radius[:, None] + pad], axis=1)
    capsules = np.concatenate(
        [at(sh.capsule_body, sh.capsule_a), at(sh.capsule_body, sh.capsule_b), sh.capsule_radius[:, None] + pad],
        axis=1,
    )
    return spheres.astype(np.float32), capsules.astype(np.float32)
