"""MuJoCo offscreen rendering of the simulated character beside its reference, drawn as a translucent ghost.

The offscreen context, camera and frame loop are :mod:`animat.viz.mujoco_render`'s (None where no
OpenGL context can be made: the caller falls back to matplotlib, :mod:`animat.imitate.play`). The
ghost is a second copy of the character posed kinematically (the clip's pose at the same time): its
geoms are added to each frame's scene with :func:`mujoco.mjv_addGeoms` and recoloured ``GHOST_RGBA``;
the camera looks from the side at the point midway between the two.
"""

from __future__ import annotations

import mujoco
import numpy as np

from animat.viz.mujoco_render import View, add_triangles, render_frames

GHOST_RGBA = np.array([1.0, 0.62, 0.25, 0.35], dtype=np.float32)
GARMENT_RGBA = np.array([0.18, 0.55, 0.34, 1.0], dtype=np.float32)


def render_with_ghost(
    model: mujoco.MjModel,
    sim_qpos: np.ndarray,
    ghost_qpos: np.ndarray,
    *,
    ghost_offset: np.ndarray,
    captions: list[str] | None = None,
    garment: tuple[np.ndarray, np.ndarray] | None = None,
    width: int = 480,
    height: int = 320,
) -> tuple[str, list[np.ndarray]] | None:
    """Images ``(height, width, 3) uint8`` of the character at ``sim_qpos (F, nq)`` and its ghost at
    ``ghost_qpos (F, nq)`` moved by ``ghost_offset (3,)`` m, with a camera following both from the side, and a worn
    ``garment`` (world vertices (F, V, 3) m, triangles (T, 3)) on the character; ``(backend, images)`` or None without
    GL."""
    ghost = mujoco.MjData(model)
    opt, pert = mujoco.MjvOption(), mujoco.MjvPerturb()

    def add_ghost(i: int, scene: mujoco.MjvScene) -> None:
        ghost.qpos[:] = ghost_qpos[i]
        ghost.qpos[:3] += ghost_offset
        mujoco.mj_kinematics(model, ghost)
        first = scene.ngeom
        mujoco.mjv_addGeoms(model, ghost, opt, pert, mujoco.mjtCatBit.mjCAT_DYNAMIC, scene)
        for k in range(first, scene.ngeom):
            scene.geoms[k].rgba[:] = GHOST_RGBA
        if garment is not None:
            add_triangles(scene, garment[0][i], garment[1], GARMENT_RGBA)

    view = View(
        distance=3.4,
        azimuth=150.0,
        elevation=-12.0,
        offset=tuple(0.5 * np.asarray(ghost_offset, dtype=float)),
        lookat_z=0.8,
    )
    return render_frames(
        model,
        sim_qpos,
        track_body=1,
        view=view,
        decorate=add_ghost,
        extra_geoms=model.ngeom + 16 + (0 if garment is None else len(garment[1])),
        captions=captions,
        width=width,
        height=height,
    )
