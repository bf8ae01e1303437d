"""``ImitateEnv``: the Gymnasium contract, reference state initialisation, early termination."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from animat.imitate.env import ImitateEnv


def test_check_env_passes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(ImitateEnv(), skip_render_check=True)


def test_rsi_is_seeded_and_switchable():
    env = ImitateEnv()
    a, _ = env.reset(seed=3)
    b, _ = env.reset(seed=3)
    c, info = env.reset(seed=4)
    assert np.array_equal(a, b) and not np.array_equal(a, c) and 0 <= info["time"] < 1.0
    _, info = ImitateEnv(rsi=False).reset(seed=4)
    assert info["time"] == 0.0


def test_early_termination_switch():
    """A limp character (all targets zero) falls; with early termination the episode ends on the fall."""
    zero = np.zeros(28, np.float32)
    env = ImitateEnv(rsi=False, max_seconds=3.0)
    env.reset(seed=0)
    steps, terminated = 0, False
    while not terminated and steps < 90:
        _, r, terminated, truncated, info = env.step(zero)
        assert 0.0 <= r <= 1.0
        steps += 1
    assert terminated and steps < 90
    assert (
        r == 0.0 and info["r_imitation"] > 0.0
    )  # the fall's step earns nothing (DeepMimic), though it still imitated a little
    env = ImitateEnv(rsi=False, early_termination=False, max_seconds=1.0)
    env.reset(seed=0)
    flags = [env.step(zero)[2:4] for _ in range(30)]
    assert not any(t for t, _ in flags) and flags[-1][1]  # never terminated, truncated at 1 s


def test_residual_actions_and_python_servo_path():
    """residual=True: a zero action tracks the clip open-loop, scoring far above absolute zero targets;
    mujoco_servos=False (the Python ball-joint PD) gives the same observation layout and a valid step."""
    zero = np.zeros(28, np.float32)

    def mean_reward(env, steps=15):
        env.reset(seed=0)
        return np.mean([env.step(zero)[1] for _ in range(steps)])

    assert mean_reward(ImitateEnv(rsi=False, residual=True)) > mean_reward(ImitateEnv(rsi=False)) + 0.1
    env = ImitateEnv(mujoco_servos=False)
    obs, _ = env.reset(seed=1)
    assert env.model.nu == 4 and obs.shape == ImitateEnv().observation_space.shape
    obs, r, *_ = env.step(zero)
    assert np.isfinite(obs).all() and 0.0 <= r <= 1.0


def test_joint_limits_switch_keeps_the_spaces():
    """joint_limits=True adds 6 limit springs per ball joint inside MuJoCo; the spaces and the clip-tracking
    reward at the start are unchanged (the demo clip stays inside the limits)."""
    plain, limited = ImitateEnv(rsi=False, residual=True), ImitateEnv(rsi=False, residual=True, joint_limits=True)
    assert limited.model.nu == plain.model.nu + 8 * 6
    assert limited.observation_space == plain.observation_space and limited.action_space == plain.action_space
    a, _ = plain.reset(seed=0)
    b, _ = limited.reset(seed=0)
    assert np.array_equal(a, b)
    zero = np.zeros(28, np.float32)
    ra = [plain.step(zero)[1] for _ in range(10)]
    rb = [limited.step(zero)[1] for _ in range(10)]
    assert np.allclose(ra, rb, atol=1e-6)


def test_a_goal_needs_a_goal_weight():
    from animat.errors import ConfigError
    from animat.imitate.goal import GoalConfig
    from animat.imitate.reward import preset

    with pytest.raises(ConfigError, match="w_goal > 0"):
        ImitateEnv(goal=GoalConfig())  # the default reward would weigh r_G by 0 and ignore it silently
    ImitateEnv(goal=GoalConfig(), reward=preset("paper", w_imitation=0.7, w_goal=0.3))


def test_rewards_see_the_state_the_step_reached():
    """After a control step the end effectors, centre of mass and its velocity are those of the new state
    (as a full mj_forward of it gives), not those of the last substep's start."""
    import mujoco

    from animat.character.model import kinematics

    env = ImitateEnv(rsi=False, early_termination=False)
    env.reset(seed=0)
    for _ in range(5):
        env.step(np.zeros(env.action_space.shape, np.float32))
    fresh = mujoco.MjData(env.model)
    fresh.qpos[:], fresh.qvel[:] = env.data.qpos, env.data.qvel
    mujoco.mj_forward(env.model, fresh)
    a, b = kinematics(env.model, env.data, env.layout), kinematics(env.model, fresh, env.layout)
    np.testing.assert_array_equal(a.end_effectors, b.end_effectors)
    np.testing.assert_array_equal(a.com, b.com)
    np.testing.assert_array_equal(a.com_vel, b.com_vel)
