"""The optional task goal r_G (target heading and speed): closed form, observation, environment contract."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from animat.errors import ConfigError
from animat.imitate.env import ImitateEnv
from animat.imitate.goal import OBS_SIZE, GoalConfig, draw_goal, heading_reward
from animat.imitate.reward import RewardConfig
from animat.imitate.train import TrainConfig, make_env


def test_heading_reward_closed_form():
    d = np.array([np.cos(0.4), np.sin(0.4), 0.0])
    # at or above v* along d*: exactly 1, whatever the sideways or vertical velocity
    for v in (1.2 * d, 1.2 * d + [0.0, 0.0, -0.5], 3.0 * d + 0.7 * np.array([-d[1], d[0], 0.0])):
        assert heading_reward(v, d, 1.2) == 1.0
    # below: exp(-2.5 shortfall²), falling monotonically as the velocity error grows
    assert heading_reward(0.7 * d, d, 1.2) == pytest.approx(np.exp(-2.5 * 0.5**2))
    assert heading_reward(np.zeros(3), d, 1.2, scale=4.0) == pytest.approx(np.exp(-4.0 * 1.44))
    rewards = [heading_reward(s * d, d, 1.2) for s in np.linspace(1.2, -2.0, 12)]
    assert all(a > b for a, b in zip(rewards, rewards[1:]))
    # moving at speed but at right angles to d*: the whole speed is short
    assert heading_reward(1.2 * np.array([-d[1], d[0], 0.0]), d, 1.2) == pytest.approx(np.exp(-2.5 * 1.44))


def test_draw_goal_ranges_and_changes():
    rng = np.random.default_rng(0)
    advance = np.array([0.0, 2.0, 0.0])  # the clip travels along +y
    g = draw_goal(GoalConfig(heading_range=0.0), rng, advance, 1.3, now=0.5)
    assert g.direction == pytest.approx([0.0, 1.0, 0.0]) and g.speed == 1.3 and g.until == np.inf
    goals = [
        draw_goal(GoalConfig(heading_range=0.5, speed=(0.5, 2.0), change_seconds=(1.0, 2.0)), rng, advance, 1.3, 3.0)
        for _ in range(200)
    ]
    angles = np.array([np.arctan2(x.direction[1], x.direction[0]) for x in goals]) - np.pi / 2
    assert np.abs(angles).max() <= 0.5 and np.ptp(angles) > 0.8
    assert all(np.linalg.norm(x.direction) == pytest.approx(1.0) and x.direction[2] == 0.0 for x in goals)
    assert all(0.5 <= x.speed <= 2.0 and 4.0 <= x.until <= 5.0 for x in goals)
    for bad in (
        dict(heading_range=4.0),
        dict(speed=(2.0, 1.0)),
        dict(speed=("a", 1.0)),
        dict(change_seconds=(0.0, 0.0)),
        dict(scale=0.0),
    ):
        with pytest.raises(ConfigError, match="goal"):
            GoalConfig(**bad)


def test_goal_observation_and_reward():
    """The goal adds OBS_SIZE numbers (direction in the heading frame, speed) after the phase; the reward
    is w_I r_I + w_G r_G; the goal is re-drawn within an episode when configured."""
    plain = ImitateEnv(rsi=False)
    env = ImitateEnv(
        rsi=False,
        goal=GoalConfig(heading_range=0.0, speed=(1.5, 1.5)),
        reward=RewardConfig(w_imitation=0.7, w_goal=0.3),
    )
    assert env.observation_space.shape[0] == plain.observation_space.shape[0] + OBS_SIZE
    a, _ = plain.reset(seed=0)
    b, _ = env.reset(seed=0)
    assert np.array_equal(b[: a.size], a)
    # the demo clip walks along +x facing +x: the goal is straight ahead in the heading frame
    assert b[-3:] == pytest.approx([1.0, 0.0, 1.5], abs=1e-3)
    act = np.zeros(28, np.float32)
    _, r, *_, info = env.step(act)
    assert r == pytest.approx(0.7 * info["r_imitation"] + 0.3 * info["r_goal"])
    assert plain.step(act)[4]["r_imitation"] == pytest.approx(info["r_imitation"])
    moving = ImitateEnv(
        rsi=False, goal=GoalConfig(change_seconds=(0.1, 0.1)), reward=RewardConfig(w_imitation=0.7, w_goal=0.3)
    )
    obs, _ = moving.reset(seed=1)
    seen = {tuple(np.round(obs[-3:-1], 4))}
    for _ in range(9):
        obs = moving.step(act)[0]
        seen.add(tuple(np.round(obs[-3:-1], 4)))
    assert len(seen) >= 3  # new directions every 0.1 s (3 control steps)


def test_check_env_passes_with_goal():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_env(
            ImitateEnv(goal=GoalConfig(change_seconds=(0.5, 1.0)), reward=RewardConfig(w_imitation=0.7, w_goal=0.3)),
            skip_render_check=True,
        )


def test_train_config_goal_options():
    cfg = TrainConfig.build(
        None, goal=True, goal_speed=[1.0, 1.4], goal_change_seconds=[2.0, 4.0], goal_weights=[0.6, 0.4]
    )
    env = make_env(cfg)
    assert env.goal_cfg == GoalConfig(speed=(1.0, 1.4), change_seconds=(2.0, 4.0))
    assert (env.cfg.w_imitation, env.cfg.w_goal) == (0.6, 0.4)
    assert make_env(TrainConfig.build(None)).goal_cfg is None
    for bad, words in (
        (dict(goal_weights=[1.0]), "goal_weights"),
        (dict(goal_speed=[1.0]), "goal_speed"),
        (dict(goal_change_seconds=2.0), "goal_change_seconds"),
        (dict(goal_heading_range=-1.0), "heading_range"),
    ):
        with pytest.raises(ConfigError, match=words):
            TrainConfig.build(None, goal=True, **bad)


def test_training_and_play_with_a_goal(tmp_path):
    """A tiny PPO run with the goal on: the policy sees the 3 extra inputs, and play reports r_G."""
    pytest.importorskip("stable_baselines3")
    from animat.imitate.play import play
    from animat.imitate.policy import load_policy
    from animat.imitate.train import train

    cfg = TrainConfig.build(
        None,
        goal=True,
        goal_change_seconds=[0.3, 0.6],
        timesteps=64,
        envs=1,
        vec_env="dummy",
        net_arch=[8],
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        eval_episodes=1,
        checkpoint_every=0,
        max_seconds=1.0,
    )
    run = tmp_path / "run"
    run.mkdir()
    train(cfg, run)
    assert load_policy(run).obs_dim == ImitateEnv().observation_space.shape[0] + OBS_SIZE
    summary = play(run, 0.5, tmp_path / "play", render=False)
    assert 0.0 <= summary["mean_r_goal"] <= 1.0 and 0.0 < summary["mean_r_imitation"] <= 1.0
