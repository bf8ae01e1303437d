"""The replay GIF: MuJoCo's offscreen rendering where a GL context can be made, else the stick figure."""

from __future__ import annotations

import json

import imageio.v3 as iio
import numpy as np
import pytest

from animat.skier.gene import mirror
from animat.skier.model import JOINTS, SkierParams
from animat.skier.replay import write_replay
from animat.viz import mujoco_render


def _swinging_gene() -> np.ndarray:
    """(10, 12): standing, the arms swinging forward and back (something moves from frame to frame)."""
    g = np.zeros((10, len(JOINTS)), dtype=np.int64)
    g[:5, JOINTS.index("left_shoulder")] = [0, 30, 60, 30, 0]
    return mirror(g[None])[0]


def _gif_frames(out):
    return iio.imread(out / "media" / "skier.gif", index=None)[..., :3].astype(int)


@pytest.mark.skipif(not mujoco_render.gl_available(), reason="no offscreen OpenGL (EGL or OSMesa) here")
def test_replay_renders_with_mujoco_where_gl_works(tmp_path):
    s = write_replay(SkierParams(), _swinging_gene(), 1.0, tmp_path, anim_seconds=1.0)
    assert s["renderer"] in ("mujoco-egl", "mujoco-osmesa") and not s["fell"]
    frames = _gif_frames(tmp_path)
    assert frames.shape[0] == 10 and frames.shape[1:] == (300, 400, 3)
    assert np.abs(frames[5] - frames[0]).mean() > 0.5  # the arms swing
    r, g, b = frames[0][..., 0], frames[0][..., 1], frames[0][..., 2]
    assert ((r > 150) & (g < 60) & (b < 60)).sum() > 200  # the red skis are in view
    assert (tmp_path / "plots" / "topview.png").is_file()


def test_replay_falls_back_to_the_stick_figure_without_gl(tmp_path, monkeypatch):
    monkeypatch.setattr(mujoco_render, "offscreen_context", lambda width, height: None)
    s = write_replay(SkierParams(), _swinging_gene(), 0.6, tmp_path, anim_seconds=0.3)
    assert s["renderer"] == "matplotlib"
    frames = _gif_frames(tmp_path)
    assert frames.shape[0] == 3 and np.abs(frames[-1] - frames[0]).mean() > 0.05
    assert iio.imread(tmp_path / "media" / "skier.mp4", plugin="FFMPEG").shape[:2] == (3, frames.shape[1])


def test_replay_with_no_animation_scores_the_same_run_and_writes_no_media(tmp_path):
    """anim_seconds 0 (``--no-animation``): no GIF, no MP4, renderer ``none``; the flight and its figures are
    the animated replay's."""
    drawn = write_replay(SkierParams(), _swinging_gene(), 0.6, tmp_path / "drawn", anim_seconds=0.1)
    quiet = write_replay(SkierParams(), _swinging_gene(), 0.6, tmp_path / "quiet", anim_seconds=0.0)
    assert quiet["renderer"] == "none" and drawn["renderer"] != "none"
    same = lambda s: json.dumps({k: v for k, v in s.items() if k != "renderer"})  # NaN == NaN as text
    assert same(quiet) == same(drawn)
    assert not (tmp_path / "quiet" / "media").exists() and (tmp_path / "quiet" / "trajectory.npz").is_file()
