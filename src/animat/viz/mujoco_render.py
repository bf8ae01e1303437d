"""MuJoCo offscreen rendering of an ``MjModel`` posed along a ``qpos`` sequence, to RGB arrays and GIFs.

MuJoCo's Python package picks its OpenGL backend once, when it is first imported, from ``MUJOCO_GL``
(unset: GLFW, which needs a display), so ``mujoco.Renderer`` in a headless process that imported
mujoco without ``MUJOCO_GL=egl`` cannot render. :func:`offscreen_context` therefore makes its own
offscreen context — the backend ``MUJOCO_GL`` names when it is ``egl`` or ``osmesa``, else EGL, then
OSMesa — and :func:`render_frames` draws with MuJoCo's low-level renderer (``MjrContext``,
``mjv_updateScene``, ``mjr_render``, ``mjr_readPixels``), as ``mujoco.Renderer`` does inside. Where no
context can be made it returns None and the caller falls back to matplotlib. OSMesa needs Debian's
``libosmesa6``; EGL a GPU driver or Mesa's EGL.

The camera tracks one body: it looks at that body's origin (plus ``View.offset``; ``View.lookat_z``
fixes the height) from ``View.distance`` m at ``View.azimuth``/``View.elevation`` degrees. A caller adds
its own geoms to each frame's scene (a ghost, a path) through ``decorate(i, scene)``.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np

from animat.viz.animate import write_gif  # noqa: F401  (the GIF writer of render_frames' callers)

BACKENDS = ("egl", "osmesa")


@dataclass(frozen=True)
class View:
    """A tracking camera: distance (m), azimuth and elevation (degrees, MuJoCo's ``mjvCamera`` convention), the point
    looked at relative to the tracked body's origin (m, world frame), and an optional fixed height of that point (m)."""

    distance: float = 3.4
    azimuth: float = 150.0
    elevation: float = -12.0
    offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    lookat_z: float | None = None


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


def render_frames(
    model: mujoco.MjModel,
    qpos: np.ndarray,
    *,
    track_body: int = 1,
    view: View = View(),
    decorate: Callable[[int, mujoco.MjvScene], None] | None = None,
    extra_geoms: int = 16,
    captions: list[str] | None = None,
    width: int = 480,
    height: int = 320,
) -> tuple[str, list[np.ndarray]] | None:
    """Images ``(height, width, 3) uint8`` of ``model`` posed at each row of ``qpos (F, nq)``, the camera tracking body
    ``track_body``; ``decorate(i, scene)`` may add up to ``extra_geoms`` geoms to frame ``i``; ``captions`` (F,) are
    drawn top left. Returns ``(backend, images)``, or None where no offscreen GL context can be made."""
    got = offscreen_context(width, height)
    if got is None:
        return None
    backend, gl = got
    model.vis.global_.offwidth = max(model.vis.global_.offwidth, width)
    model.vis.global_.offheight = max(model.vis.global_.offheight, height)
    model.vis.headlight.ambient[:], model.vis.headlight.diffuse[:] = 0.45, 0.7  # models without lights of their own
    con = None
    try:
        try:
            con = mujoco.MjrContext(model, mujoco.mjtFontScale.mjFONTSCALE_150)
            mujoco.mjr_setBuffer(mujoco.mjtFramebuffer.mjFB_OFFSCREEN, con)
        except Exception:  # noqa: BLE001 - a context too old or too small for MuJoCo: no GL rendering here
            return None
        scene = mujoco.MjvScene(model, maxgeom=model.ngeom + extra_geoms)
        opt, pert, cam = mujoco.MjvOption(), mujoco.MjvPerturb(), mujoco.MjvCamera()
        cam.distance, cam.azimuth, cam.elevation = view.distance, view.azimuth, view.elevation
        viewport = mujoco.MjrRect(0, 0, width, height)
        data = mujoco.MjData(model)
        images = []
        for i, q in enumerate(qpos):
            data.qpos[:] = q
            mujoco.mj_forward(model, data)
            cam.lookat[:] = data.xpos[track_body] + np.asarray(view.offset)
            if view.lookat_z is not None:
                cam.lookat[2] = view.lookat_z
            mujoco.mjv_updateScene(model, data, opt, pert, cam, mujoco.mjtCatBit.mjCAT_ALL, scene)
            if decorate is not None:
                decorate(i, scene)
            mujoco.mjr_render(viewport, scene, con)
            if captions:
                mujoco.mjr_overlay(
                    mujoco.mjtFont.mjFONT_NORMAL, mujoco.mjtGridPos.mjGRID_TOPLEFT, viewport, captions[i], "", con
                )
            rgb = np.empty((height, width, 3), dtype=np.uint8)
            mujoco.mjr_readPixels(rgb, None, viewport, con)
            images.append(np.flipud(rgb).copy())
        return backend, images
    finally:
        if con is not None:
            con.free()
        with contextlib.suppress(Exception):
            gl.free()


def add_sphere(scene: mujoco.MjvScene, pos: np.ndarray, radius: float, rgba: np.ndarray) -> bool:
    """Append a sphere marker of ``radius`` m at ``pos (3,)`` m to ``scene``; False (nothing added) when it is full."""
    if scene.ngeom >= scene.maxgeom:
        return False
    mujoco.mjv_initGeom(
        scene.geoms[scene.ngeom],
        mujoco.mjtGeom.mjGEOM_SPHERE,
        np.full(3, radius),
        np.asarray(pos, dtype=np.float64),
        np.eye(3).ravel(),
        np.asarray(rgba, dtype=np.float32),
    )
    scene.ngeom += 1
    return True


def add_triangles(scene: mujoco.MjvScene, vertices: np.ndarray, triangles: np.ndarray, rgba: np.ndarray) -> int:
    """Append the triangles ``triangles (F, 3)`` of ``vertices (V, 3)`` m (a cloth, say) to ``scene`` as MuJoCo
    triangle geoms (corners ``pos``, ``pos + mat[:, 0]``, ``pos + mat[:, 1]``: the frame need not be orthonormal),
    both sides lit; returns how many fitted (the scene's ``maxgeom`` bounds them)."""
    v = np.asarray(vertices, dtype=np.float64)
    a, b, c = v[triangles[:, 0]], v[triangles[:, 1]], v[triangles[:, 2]]
    n = np.cross(b - a, c - a)
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
    added, size, rgba = 0, np.ones(3), np.asarray(rgba, dtype=np.float32)
    for k in range(len(a)):
        if scene.ngeom >= scene.maxgeom:
            break
        mat = np.stack([b[k] - a[k], c[k] - a[k], n[k]], axis=1)
        mujoco.mjv_initGeom(scene.geoms[scene.ngeom], mujoco.mjtGeom.mjGEOM_TRIANGLE, size, a[k], mat.ravel(), rgba)
        scene.ngeom += 1
        added += 1
    return added
