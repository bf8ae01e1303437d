"""MuJoCo offscreen rendering of the simulated character beside its reference, drawn as a translucent ghost.

MuJoCo's Python package picks its OpenGL backend once, when it is first imported, from ``MUJOCO_GL``
(unset: GLFW, which needs a display), so ``mujoco.Renderer`` in a headless process that imported
mujoco without ``MUJOCO_GL=egl`` cannot render. :func:`offscreen_context` therefore makes its own
offscreen context — the backend ``MUJOCO_GL`` names when it is ``egl`` or ``osmesa``, else EGL, then
OSMesa — and :func:`render_frames` draws with MuJoCo's low-level renderer (``MjrContext``,
``mjv_updateScene``, ``mjr_render``, ``mjr_readPixels``), as ``mujoco.Renderer`` does inside. Where no
context can be made it returns None and the caller falls back to matplotlib
(:mod:`animat.imitate.play`). OSMesa needs Debian's ``libosmesa6``; EGL a GPU driver or Mesa's EGL.

The ghost is a second copy of the character posed kinematically (the clip's pose at the same time):
its geoms are added to the scene with :func:`mujoco.mjv_addGeoms` and recoloured ``GHOST_RGBA``.
"""

from __future__ import annotations

import contextlib
import importlib
import os

import mujoco
import numpy as np

GHOST_RGBA = np.array([1.0, 0.62, 0.25, 0.35], dtype=np.float32)
BACKENDS = ("egl", "osmesa")


def offscreen_context(width: int, height: int):
    """``(backend name, current GL context)`` for an offscreen framebuffer of ``width × height`` px, or None."""
    wanted = os.environ.get("MUJOCO_GL", "").lower()
    for name in (wanted,) if wanted in BACKENDS else BACKENDS:
        platform = os.environ.get("PYOPENGL_PLATFORM")
        try:
            ctx = importlib.import_module(f"mujoco.{name}").GLContext(width, height)
            ctx.make_current()
            return name, ctx
        except Exception:  # noqa: BLE001 - any failure to load or start a backend means: try the next one
            if platform is None:  # mujoco.egl / mujoco.osmesa set it on import; let the next backend choose again
                os.environ.pop("PYOPENGL_PLATFORM", None)
    return None


def gl_available() -> bool:
    """Whether :func:`offscreen_context` can make a context here."""
    got = offscreen_context(8, 8)
    if got is not None:
        with contextlib.suppress(Exception):
            got[1].free()
    return got is not None


def render_frames(model: mujoco.MjModel, sim_qpos: np.ndarray, ghost_qpos: np.ndarray, *, ghost_offset: np.ndarray,
                  captions: list[str] | None = None, width: int = 480, height: int = 320) -> tuple[str, list[np.ndarray]] | None:
    """Images ``(height, width, 3) uint8`` of the character at ``sim_qpos (F, nq)`` and its ghost at ``ghost_qpos (F, nq)``
    moved by ``ghost_offset (3,)`` m, with a camera following both from the side; ``(backend, images)`` or None without GL."""
    got = offscreen_context(width, height)
    if got is None:
        return None
    backend, gl = got
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, height)
    model.vis.headlight.ambient[:], model.vis.headlight.diffuse[:] = 0.45, 0.7  # the model has no lights of its own
    con = None
    try:
        try:
            con = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, con)
        except Exception:  # noqa: BLE001 - a context too old or too small for MuJoCo: no GL rendering here
            return None
        scene = mujoco.MjvScene(model, maxgeom=2 * model.ngeom + 16)
        opt, pert, cam = mujoco.MjvOption(), mujoco.MjvPerturb(), mujoco.MjvCamera()
        cam.distance, cam.azimuth, cam.elevation = 3.4, 150.0, -12.0
        viewport = mujoco.MjrRect(0, 0, width, height)
        sim, ghost = mujoco.MjData(model), mujoco.MjData(model)
        images = []
        for i, (q, g) in enumerate(zip(sim_qpos, ghost_qpos)):
            sim.qpos[:], ghost.qpos[:] = q, g
            ghost.qpos[:3] += ghost_offset
            mujoco.mj_forward(model, sim)
            mujoco.mj_kinematics(model, ghost)
            cam.lookat[:] = 0.5 * (sim.qpos[:3] + ghost.qpos[:3])
            cam.lookat[2] = 0.8
            mujoco.mjv_updateScene(model, sim, opt, pert, cam, mujoco.mjtCatBit.mjCAT_ALL, scene)
            first = scene.ngeom
            mujoco.mjv_addGeoms(model, ghost, opt, pert, mujoco.mjtCatBit.mjCAT_DYNAMIC, scene)
            for k in range(first, scene.ngeom):
                scene.geoms[k].rgba[:] = GHOST_RGBA
            mujoco.mjr_render(viewport, scene, con)
            if captions:
                mujoco.mjr_overlay(mujoco.mjtFont.mjFONT_NORMAL, mujoco.mjtGridPos.mjGRID_TOPLEFT, viewport, captions[i], "", con)
            rgb = np.empty((height, width, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(rgb, None, viewport, con)
            images.append(np.flipud(rgb).copy())
        return backend, images
    finally:
        if con is not None:
            con.free()
        with contextlib.suppress(Exception):
            gl.free()
