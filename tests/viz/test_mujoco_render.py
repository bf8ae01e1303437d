"""MuJoCo offscreen rendering: frames follow the tracked body and show what moves; None without GL."""

from __future__ import annotations

import imageio.v3 as iio
import mujoco
import numpy as np
import pytest

from animat.viz import mujoco_render
from animat.viz.mujoco_render import View, add_sphere, gl_available, render_frames, write_gif

# a red ball free above a plane
XML = """<mujoco><worldbody><light pos="0 0 3"/><geom type="plane" size="5 5 0.1" rgba=".8 .8 .8 1"/>
<body name="ball" pos="0 0 0.3"><freejoint/><geom type="sphere" size="0.1" rgba="1 0 0 1"/></body>\
</worldbody></mujoco>"""
needs_gl = pytest.mark.skipif(not gl_available(), reason="no offscreen OpenGL (EGL or OSMesa) here")


def _qpos(n: int, dx: float) -> np.ndarray:
    """(n, 7): the ball moved ``dx`` m along x per frame."""
    q = np.zeros((n, 7))
    q[:, 0], q[:, 2], q[:, 3] = dx * np.arange(n), 0.3, 1.0
    return q


def _red(img: np.ndarray) -> np.ndarray:
    r, g, b = (img[..., k].astype(int) for k in range(3))
    return (r > 150) & (g < 80) & (b < 80)


@needs_gl
def test_tracking_camera_keeps_the_body_centred_and_decorations_show(tmp_path):
    model = mujoco.MjModel.from_xml_string(XML)
    from_side = View(distance=2.0, azimuth=90.0, elevation=-10.0)
    backend, imgs = render_frames(model, _qpos(3, 0.4), track_body=1, view=from_side, width=160, height=120)
    assert (
        backend in mujoco_render.BACKENDS
        and len(imgs) == 3
        and imgs[0].shape == (120, 160, 3)
        and imgs[0].dtype == np.uint8
    )
    cols = [np.nonzero(_red(im).any(axis=0))[0].mean() for im in imgs]
    assert _red(imgs[0]).sum() > 100 and max(cols) - min(cols) < 3  # tracked: the ball stays in the middle
    assert abs(cols[0] - 80) < 10
    # looking at a point 0.5 m beside the ball moves it off centre; a decoration adds a green sphere
    green = np.array([0, 1, 0, 1], dtype=np.float32)
    _, side = render_frames(
        model,
        _qpos(1, 0.0),
        view=View(distance=2.0, azimuth=90.0, elevation=-10.0, offset=(0.5, 0.0, 0.0)),
        decorate=lambda i, scene: add_sphere(scene, np.array([0.0, 0.0, 0.6]), 0.08, green),
        width=160,
        height=120,
    )
    assert np.nonzero(_red(side[0]).any(axis=0))[0].mean() < cols[0] - 20
    g = side[0].astype(int)
    assert ((g[..., 1] > 150) & (g[..., 0] < 80) & (g[..., 2] < 80)).sum() > 50
    gif = write_gif(imgs, tmp_path / "ball.gif", fps=5.0)
    assert iio.imread(gif, index=None).shape[0] == 3


def test_no_context_means_none(monkeypatch):
    """Every backend failing (EGL's context cannot start, OSMesa is not installed): no context, no frames,
    ``gl_available`` False, each backend tried once, and the PyOpenGL platform a failed backend chose unset again."""
    import importlib
    import os
    import types

    tried = []

    class NoDisplay:
        def __init__(self, width, height):
            os.environ["PYOPENGL_PLATFORM"] = "egl"  # as mujoco.egl does on import
            raise RuntimeError("cannot initialise EGL")

    def import_module(name, *args):
        tried.append(name)
        if name == "mujoco.egl":
            return types.SimpleNamespace(GLContext=NoDisplay)
        raise ImportError(f"no {name}")

    monkeypatch.delenv("MUJOCO_GL", raising=False)
    monkeypatch.delenv("PYOPENGL_PLATFORM", raising=False)
    monkeypatch.setattr(importlib, "import_module", import_module)
    assert mujoco_render.offscreen_context(8, 8) is None and tried == ["mujoco.egl", "mujoco.osmesa"]
    assert "PYOPENGL_PLATFORM" not in os.environ
    assert render_frames(mujoco.MjModel.from_xml_string(XML), _qpos(2, 0.1)) is None
    assert not gl_available()


def test_add_sphere_stops_when_the_scene_is_full():
    model = mujoco.MjModel.from_xml_string(XML)
    scene = mujoco.MjvScene(model, maxgeom=2)
    assert add_sphere(scene, np.zeros(3), 0.1, np.ones(4)) and add_sphere(scene, np.ones(3), 0.1, np.ones(4))
    assert not add_sphere(scene, np.ones(3), 0.1, np.ones(4)) and scene.ngeom == 2
    assert np.allclose(scene.geoms[1].pos, 1.0) and scene.geoms[0].type == mujoco.mjtGeom.mjGEOM_SPHERE
