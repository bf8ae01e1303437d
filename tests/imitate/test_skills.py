"""Several clips for one policy (:mod:`animat.imitate.skills`): the skill selector, the max-operator reward,
one-shot episodes, and the options that declare them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from animat import quaternions as quat
from animat.character.demo import demo_clip
from animat.errors import ConfigError
from animat.imitate.env import ImitateEnv
from animat.imitate.options import TrainConfig
from animat.imitate.skills import clip_ended, clip_phase, phase_times, sample_skills, skill_name, skill_names

WALK = demo_clip()
SLOW = replace(WALK, times=WALK.times * 1.25)  # the same walk, 1.25 s a cycle


def _bent(clip, angle: float = 0.6):
    """``clip`` with the right hip turned by up to ``angle`` rad about +y, growing from 0 at frame 1 (so the state
    at time 0, where an episode without reference-state starts begins, pose and velocities, is the clip's own)."""
    grow = np.concatenate([[0.0], np.linspace(0.0, angle, clip.num_frames - 1)])
    turn = quat.about_axis(np.array([0.0, 1.0, 0.0]), grow)  # (N, 4)
    joints = clip.joint_quats.copy()
    joints[:, 1] = quat.mul(joints[:, 1], turn)
    return replace(clip, joint_quats=joints)


def _actions(steps: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 0.3, (steps, 28)).astype(np.float32)


def _run(env, actions, seed: int):
    """Observations, rewards, ends and infos of ``env`` under ``actions``, reset (seed, seed + 1, ...) at each end."""
    obs, _ = env.reset(seed=seed)
    out, resets = [obs], 0
    for a in actions:
        obs, r, term, trunc, info = env.step(a)
        out.append((obs, r, term, trunc, info))
        if term or trunc:
            resets += 1
            out.append(env.reset(seed=seed + resets)[0])
    return out


@pytest.mark.parametrize("clips", [[WALK], [WALK, SLOW]])
def test_selector_with_a_fixed_command_steps_as_the_single_clip_env(clips):
    """Same seed, same actions: the skill-conditioned env with its command fixed on the walk gives the single-clip
    env's observations (but for the appended one-hot, which is the walk's) and rewards, episode ends included."""
    single = ImitateEnv(WALK, max_seconds=0.7, pose_termination=0.3, target_obs=True)
    skilled = ImitateEnv(clips=clips, max_seconds=0.7, pose_termination=0.3, target_obs=True)
    skilled.command = 0
    a, b = _run(single, _actions(60), 5), _run(skilled, _actions(60), 5)
    hot = np.eye(len(clips), dtype=np.float32)[0]
    ends = 0
    for x, y in zip(a, b):
        if isinstance(x, np.ndarray):  # a reset's observation
            np.testing.assert_array_equal(y, np.concatenate([x, hot]))
            continue
        np.testing.assert_array_equal(y[0], np.concatenate([x[0], hot]))
        assert y[1:4] == x[1:4] and y[4]["skill"] == 0
        ends += x[2] or x[3]
    assert ends >= 2 and skilled.observation_space.shape[0] == single.observation_space.shape[0] + len(clips)


def test_selector_draws_the_skill_per_reset_and_starts_on_its_clip():
    env = ImitateEnv(clips=[WALK, SLOW])
    drawn = []
    for seed in range(16):
        obs, info = env.reset(seed=seed)
        drawn.append(env.skill)
        assert env.clip is (WALK, SLOW)[env.skill] and 0 <= info["time"] < env.clip.cycle_seconds
        np.testing.assert_array_equal(obs[-2:], np.eye(2)[env.skill])
        assert env.reset(seed=seed)[0].tolist() == obs.tolist()  # seeded
    assert set(drawn) == {0, 1}
    env.reset(seed=0, options={"skill": 1})
    assert env.skill == 1
    with pytest.raises(ConfigError, match="skill must be an index"):
        env.reset(options={"skill": 2})


def test_max_reward_is_the_largest_clip_reward_on_a_two_clip_toy():
    """Two clips that share their first segment and then part (the hip bent by up to 0.6 rad): from that frame and
    under the same actions the character moves the same whatever its reference, so the max env's reward at every
    step is exactly max(r_A, r_B) of the two single-clip envs, its ``skill`` the argmax, its observation A's."""
    bent = _bent(WALK)
    kw = dict(rsi=False, max_seconds=1.5, early_termination=False)
    env_a, env_b = ImitateEnv(WALK, **kw), ImitateEnv(bent, **kw)
    both = ImitateEnv(clips=[WALK, bent], multi_clip="max", **kw)
    for env in (env_a, env_b, both):
        env.reset(seed=0)
    winners = set()
    for a in _actions(45, seed=2):
        oa, ra, *_ = env_a.step(a)
        _, rb, *_ = env_b.step(a)
        o, r, _, _, info = both.step(a)
        assert r == max(ra, rb) and info["r_imitation"] == r
        assert info["skill"] == int(rb > ra)
        np.testing.assert_array_equal(o, oa)
        winners.add(info["skill"])
    assert winners == {0, 1}  # each clip was the nearer one somewhere


def test_phase_times_and_sampling_per_skill():
    """Clip j at clip 0's phase: t · T_j / T_0 (closed form); sample_skills gives each character its own clip's
    sample."""
    t = np.array([0.0, 0.5, 1.7])
    np.testing.assert_allclose(phase_times([WALK, SLOW], t)[1], t * 1.25)
    skill = np.array([1, 0, 1])
    got = sample_skills([WALK, SLOW], skill, t)
    for i, (k, ti) in enumerate(zip(skill, t)):
        want = (WALK, SLOW)[k].sample(ti)
        np.testing.assert_allclose(got.joint_quats[i], want.joint_quats, atol=1e-12)
        np.testing.assert_allclose(got.root_pos[i], want.root_pos, atol=1e-12)


@pytest.mark.parametrize("rsi", [False, True])
def test_one_shot_episode_ends_at_the_clip_end(rsi):
    """A one-shot clip (Loop none) truncates its episode when the clip time reaches its end (the documented rule),
    long before max_seconds; the same clip looping runs to max_seconds."""
    once = replace(WALK, loop="none")
    env = ImitateEnv(once, rsi=rsi, residual=True, early_termination=False, max_seconds=3.0)
    _, info = env.reset(seed=4)
    steps, done = 0, False
    while not done:
        _, _, term, trunc, _ = env.step(np.zeros(28, np.float32))
        steps, done = steps + 1, term or trunc
    assert trunc and not term and env.t >= once.cycle_seconds - 1e-9
    assert steps == int(np.ceil((once.cycle_seconds - info["time"]) * 30 - 1e-6))
    looping = ImitateEnv(WALK, rsi=False, residual=True, early_termination=False, max_seconds=1.5)
    looping.reset(seed=4)
    assert sum(1 for _ in iter(lambda: looping.step(np.zeros(28, np.float32))[3], True)) == 44  # 45th truncates


def test_one_shot_hold_imitates_the_last_pose_held_still_and_clamps_the_phase():
    """hold_seconds: a one-shot episode goes on hold_seconds past the clip's end (no longer), its reference there is
    the clip's last pose with zero velocities, and the observation's phase (its last number without target or
    goal) stays 1 there; a looping clip's phase wraps."""
    once = replace(WALK, loop="none")
    end = once.cycle_seconds
    env = ImitateEnv(once, rsi=False, residual=True, early_termination=False, max_seconds=5.0, hold_seconds=0.5)
    env.reset(seed=1)
    phases, done = [], False
    while not done:
        obs, _, term, trunc, _ = env.step(np.zeros(28, np.float32))
        phases.append((env.t, float(obs[-1])))
        done = term or trunc
    assert trunc and not term and end + 0.5 - 1e-9 <= env.t < end + 0.5 + 1 / 30
    assert all(p == 1.0 for t, p in phases if t >= end) and sum(t >= end for t, _ in phases) >= 15  # 0.5 s at 30 Hz
    assert all(p == pytest.approx(t / end) for t, p in phases if t < end)
    held, last = once.sample(end + 0.3), once.sample(end)
    np.testing.assert_allclose(held.joint_quats, last.joint_quats, atol=1e-12)
    assert not held.root_vel.any() and not held.joint_angvel.any()
    np.testing.assert_allclose(
        clip_phase(np.array([0.25, 1.7]) * WALK.cycle_seconds, WALK.cycle_seconds, False), [0.25, 0.7]
    )
    assert (
        not clip_ended(once, end + 0.49, 0.5) and clip_ended(once, end + 0.5, 0.5) and not clip_ended(WALK, 99.0, 0.5)
    )


def test_skill_names_and_options():
    assert skill_name("shared:humanoid3d_walk.txt") == "walk" and skill_name("clips/kick.txt") == "kick"
    with pytest.raises(ConfigError, match="more than once"):
        skill_names(["a/humanoid3d_walk.txt", "b/walk.txt"])
    with pytest.raises(ConfigError, match="not both"):
        TrainConfig.build(clip="shared:humanoid3d_walk.txt", clips=["shared:humanoid3d_run.txt"])
    with pytest.raises(ConfigError, match="multi_clip"):
        TrainConfig.build(multi_clip="mean")
    with pytest.raises(ConfigError, match="no task goal"):
        TrainConfig.build(clips=["a.txt"], goal=True)
    cfg = TrainConfig.build()
    assert cfg.skills == [] and cfg.clip_label == "demo" and cfg.load_clips() is None


@pytest.mark.parametrize("backend", ["local", pytest.param("ray", marks=pytest.mark.slow)])
def test_max_reward_training_runs_through_the_train_path(tmp_path, backend):
    """PPO over the max-operator reward of two clips, batched here or on Ray actors: the run trains the steps asked,
    its policy takes the single-clip observation (no one-hot) and names its skills."""
    pytest.importorskip("stable_baselines3")
    if backend == "ray":
        pytest.importorskip("ray")
    from animat.character.clip import write_clip
    from animat.imitate.policy import load_policy
    from animat.imitate.train import train

    write_clip(WALK, tmp_path / "walk.txt")
    write_clip(_bent(WALK), tmp_path / "bent.txt")
    cfg = TrainConfig.build(
        None,
        clips=[str(tmp_path / "walk.txt"), str(tmp_path / "bent.txt")],
        multi_clip="max",
        backend=backend,
        actors=2,
        vec_env="batched",
        envs=4,
        timesteps=512,
        n_steps=64,
        batch_size=128,
        n_epochs=1,
        net_arch=[16, 16],
        eval_episodes=1,
        max_seconds=1.0,
        checkpoint_every=0,
    )
    (tmp_path / "run").mkdir()
    summary = train(cfg, tmp_path / "run")
    policy = load_policy(tmp_path / "run" / "policy")
    assert summary["timesteps"] == 512 and summary["clip"] == "walk+bent"
    assert policy.manifest["multi_clip"] == "max" and policy.manifest["skills"] == ["walk", "bent"]
    assert policy.obs_dim == ImitateEnv().observation_space.shape[0]


def test_reset_keeps_a_clip_put_in_place_from_outside():
    """One clip: reset leaves ``env.clip`` as a caller set it (``animat play imitate`` turns the walk through a
    TurnedClip put there before its reset); a selector puts the episode's skill's clip there."""
    from animat.imitate.live import TurnedClip

    env = ImitateEnv(rsi=False)
    turned = env.clip = TurnedClip(env.clip)
    env.reset(seed=0)
    assert env.clip is turned
    assert not env.step(np.zeros(env.action_space.shape, np.float32))[3]  # it steps: a turned walk never ends
    skilled = ImitateEnv(clips=[WALK, SLOW], rsi=False)
    skilled.clip = turned
    skilled.reset(seed=0, options={"skill": 1})
    assert skilled.clip is SLOW
