"""A character wearing a garment frame by frame (:mod:`animat.imitate.dress`, :mod:`animat.character.wear`)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from animat import quaternions as quat
from animat.character import wear
from animat.character.bones import body_frames, body_ids
from animat.character.model import build_model
from animat.errors import ConfigError
from animat.imitate.dress import Dresser, frames_between


class Recorder:
    """A garment that records the body frames it is given; one vertex at the root."""

    name, triangles, warmup_frames = "recorder", np.zeros((0, 3), int), 3

    def __init__(self, fps: float = 60.0):
        self.fps, self.seen = fps, []

    def start(self, frames):
        self.seen.append(("start", np.array(frames)))
        return np.asarray(frames[:3])[None]

    def step(self, frames):
        self.seen.append(("step", np.array(frames)))
        return np.asarray(frames[:3])[None]


def test_frames_between_interpolates_positions_and_rotations():
    rng = np.random.default_rng(0)
    a = np.concatenate([rng.normal(size=(15, 3)), quat.normalize(rng.normal(size=(15, 4)))], 1).ravel()
    b = np.concatenate([rng.normal(size=(15, 3)), quat.normalize(rng.normal(size=(15, 4)))], 1).ravel()
    np.testing.assert_allclose(frames_between(a, b, 0.0), a, atol=1e-6)
    half = frames_between(a, b, 0.5).reshape(15, 7)
    np.testing.assert_allclose(half[:, :3], (a.reshape(15, 7)[:, :3] + b.reshape(15, 7)[:, :3]) / 2, atol=1e-6)
    qa, qb, qh = a.reshape(15, 7)[:, 3:], b.reshape(15, 7)[:, 3:], half[:, 3:]
    np.testing.assert_allclose(quat.angle_between(qa, qh), quat.angle_between(qh, qb), atol=1e-5)  # halfway
    end = frames_between(a, b, 1.0).reshape(15, 7)
    np.testing.assert_allclose(end[:, :3], b.reshape(15, 7)[:, :3], atol=1e-6)
    np.testing.assert_allclose(quat.angle_between(end[:, 3:], qb), 0.0, atol=1e-3)


def test_the_dresser_steps_the_garment_twice_a_control_step_on_the_body_frames():
    m = build_model()
    d = mujoco.MjData(m)
    d.qpos[2] = 1.0
    mujoco.mj_kinematics(m, d)
    garment = Recorder()
    dresser = Dresser(garment, m, d)
    first = body_frames(d, body_ids(m))
    assert [k for k, _ in garment.seen] == ["start", "step", "step", "step"]  # the warm-up on the first pose
    assert all(np.array_equal(f, first) for _, f in garment.seen)
    d.qpos[:3] += [0.1, 0.0, 0.0]
    mujoco.mj_kinematics(m, d)
    dresser.after_step()
    mid, now = garment.seen[-2][1], garment.seen[-1][1]
    np.testing.assert_allclose(now, body_frames(d, body_ids(m)), atol=1e-6)
    np.testing.assert_allclose(mid[0], first[0] + 0.05, atol=1e-6)  # the root halfway along its move
    assert dresser.frames == 2 and dresser.vertices.shape == (1, 3)


def test_a_garment_at_a_rate_that_is_no_multiple_of_the_control_is_refused():
    m = build_model()
    with pytest.raises(ConfigError, match="whole multiple"):
        Dresser(Recorder(fps=45.0), m, mujoco.MjData(m))


def test_without_a_registered_opener_a_garment_is_a_one_line_error():
    wear.set_opener(None)
    try:
        with pytest.raises(ConfigError, match="no system that simulates garments"):
            wear.open_garment("pretrained:cape")
    finally:
        from animat import systems

        wear.set_opener(systems.open_garment)
