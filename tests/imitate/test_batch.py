"""The batched humanoids (:mod:`animat.imitate.batch`, :mod:`animat.imitate.vecenv`) against one ``ImitateEnv`` each."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from animat import quaternions as quat  # noqa: E402
from animat.character.demo import demo_clip  # noqa: E402
from animat.errors import ConfigError  # noqa: E402
from animat.imitate.batch import ImitateBatch, pose_arrays, target_observation  # noqa: E402
from animat.imitate.env import ImitateEnv  # noqa: E402
from animat.imitate.reward import preset  # noqa: E402
from animat.imitate.vecenv import BatchVecEnv  # noqa: E402

N, STEPS = 4, 75
_WALK = demo_clip()
_SLOW = replace(_WALK, times=_WALK.times * 1.25)  # another skill: the walk at 1.25 s a cycle
_ONCE = replace(_WALK, loop="none")  # a one-shot skill


def _actions(seed: int = 0, std: float = 0.3) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, std, (STEPS, N, 28)).astype(np.float32)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"residual": True, "pose_termination": 0.25, "substeps": 10, "max_seconds": 1.0, "target_obs": True},
        {"clips": [_ONCE, _SLOW], "pose_termination": 0.25, "target_obs": True},  # skill selector
        {
            "clips": [_ONCE, _SLOW],
            "hold_seconds": 0.4,
            "max_seconds": 1.2,
            "substeps": 10,
        },  # the one-shot's last pose held
        {"clips": [_WALK, _SLOW], "multi_clip": "max", "pose_termination": 0.25, "residual": True},
    ],
)
def test_batched_steps_are_each_env_stepped_alone(options):
    """Same seed and actions: the batch (2 threads) reaches bit for bit the MuJoCo states of N ImitateEnvs in
    SB3's DummyVecEnv, episode ends included (falls, pose errors, the time cap, auto-resets), with the same
    observations and rewards up to float rounding."""
    clip = demo_clip()
    single = DummyVecEnv([lambda: ImitateEnv(clip, **options) for _ in range(N)])
    batched = BatchVecEnv(ImitateBatch(clip, N, threads=2, **options))
    for venv in (single, batched):
        venv.seed(7)
    np.testing.assert_array_equal(single.reset(), batched.reset())
    ends = 0
    for a in _actions():
        o1, r1, d1, i1 = single.step(a)
        o2, r2, d2, i2 = batched.step(a)
        for env, data in zip(single.envs, batched.batch.datas):
            assert np.array_equal(env.data.qpos, data.qpos) and np.array_equal(env.data.qvel, data.qvel)
        np.testing.assert_array_equal(d1, d2)
        np.testing.assert_allclose(o2, o1, rtol=0, atol=1e-5)
        np.testing.assert_allclose(r2, r1, rtol=0, atol=1e-9)
        for a1, a2 in zip(i1, i2):
            assert a1["TimeLimit.truncated"] == a2["TimeLimit.truncated"] and a2["r_imitation"] == pytest.approx(
                a1["r_imitation"], abs=1e-9
            )
            assert ("terminal_observation" in a1) == ("terminal_observation" in a2)
            if "terminal_observation" in a1:
                np.testing.assert_allclose(a2["terminal_observation"], a1["terminal_observation"], atol=1e-5)
        ends += int(d1.sum())
    assert ends >= N  # the comparison went through episode ends and restarts
    batched.close()


def test_target_observation_is_the_reference_seen_from_the_character():
    """Closed form: a character at (1, 2, 0) facing +y (yaw 90°) sees a reference 1 m further along +y straight
    ahead (+x of its heading frame), a reference facing +x as turned 90° to its right, and the reference's
    hand 0.5 m along +x (on its right, −y) and 0.3 m below its root; at zero offset everything is 0 and
    the identity."""
    yaw = quat.about_axis(np.array([0.0, 0.0, 1.0]), np.pi / 2)
    ident = np.array([1.0, 0.0, 0.0, 0.0])
    root = np.array([[1.0, 2.0, 0.9]])
    obs = target_observation(root, yaw[None], root + [0.0, 1.0, 0.0], ident[None], (root + [0.5, 1.0, -0.3])[:, None])
    np.testing.assert_allclose(obs[0, :3], [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(quat.angle_between(obs[0, 3:7], quat.conj(yaw)), 0.0, atol=1e-7)
    np.testing.assert_allclose(obs[0, 7:], [1.0, -0.5, -0.3], atol=1e-12)
    same = target_observation(root, yaw[None], root, yaw[None], root[:, None])
    np.testing.assert_allclose(same[0], [0, 0, 0, 1, 0, 0, 0, 0, 0, 0], atol=1e-12)


def test_target_obs_adds_ten_numbers_per_key_point():
    clip = demo_clip()
    plain, target = ImitateBatch(clip, 2, seed=0), ImitateBatch(clip, 2, seed=0, target_obs=True)
    assert target.observation_size == plain.observation_size + 7 + 3 * 4
    np.testing.assert_array_equal(target.observations()[:, : plain.observation_size], plain.observations())
    np.testing.assert_allclose(
        target.observations()[:, plain.observation_size : plain.observation_size + 3], 0.0, atol=1e-6
    )  # starts on the reference


def test_threads_change_nothing():
    clip = demo_clip()
    runs = []
    for threads in (1, 2):
        b = ImitateBatch(clip, N, threads=threads, seed=3)
        out = [b.step(a) for a in _actions(1, 0.1)[:20]]
        runs.append((out, b.qpos.copy()))
        b.close()
    (one, q1), (two, q2) = runs
    assert np.array_equal(q1, q2)
    for x, y in zip(one, two):
        for u, v in zip(x, y):
            assert np.array_equal(u, v)


def test_reset_restarts_only_the_given_characters():
    clip = demo_clip()
    b = ImitateBatch(clip, 3, seed=0)
    for a in _actions(2, 0.05)[:5, :3]:
        b.step(a)
    before = [d.qpos.copy() for d in b.datas]
    t_before = b.t.copy()
    b.reset(np.array([1]), seeds=[11])
    assert np.array_equal(b.datas[0].qpos, before[0]) and np.array_equal(b.datas[2].qpos, before[2])
    assert b.t[0] == t_before[0] and b.t[2] == t_before[2]
    start = np.random.default_rng(11).uniform(0.0, clip.cycle_seconds)  # Gymnasium's seeding of seed 11
    assert b.t[1] == b.t0[1] == pytest.approx(start, abs=0)
    qpos, _ = pose_arrays(clip.sample_batch(np.array([start])), b.layout, b.model.qpos0, b.model.nv)
    np.testing.assert_array_equal(b.datas[1].qpos, qpos[0])


def test_pose_termination_and_time_cap_per_character():
    clip = demo_clip()
    b = ImitateBatch(clip, 2, seed=0, pose_termination=1e-6)  # any deviation ends the episode
    _, r, terminated, _, _, r_i = b.step(np.zeros((2, 28)))
    assert terminated.all() and (r == 0).all() and (r_i > 0).all()
    b = ImitateBatch(clip, 2, seed=0, max_seconds=2 / 30, rsi=False)
    actions = np.zeros((2, 28))  # absolute targets: zero rotation
    for k, want in ((1, False), (2, True)):
        _, _, terminated, truncated, _, _ = b.step(actions)
        assert not terminated.any() and (truncated == want).all(), k


def test_batch_refuses_what_it_does_not_compute():
    with pytest.raises(ConfigError, match="paper"):
        ImitateBatch(demo_clip(), 2, reward=preset("deepmimic-code"))
