"""The Gymnasium environments: the contract, the same physics as the GA's rollouts, the rewards."""

import gymnasium as gym
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import animat.fly.env as fly_env
from animat.errors import ConfigError
from animat.evolve.genome import Genome
from animat.evolve.network import activate
from animat.fly.env import FlyHoverEnv, FlySteerEnv
from animat.fly.model import FlyParams
from animat.fly.physics import FlyState
from animat.fly.rollout import simulate_population, start_states
from animat.fly.steer.commands import direction
from animat.fly.steer.tracking import command_rollout, command_velocity
from animat.fly.tasks import hover, tracking


def fly_network(env, seed=3):
    """A fixed random network for the env's fly and its jitted policy obs -> action."""
    p = env.unwrapped.params
    genome = Genome.random(jax.random.PRNGKey(seed), [p.n_inputs, 20, 20, p.n_outputs], 0.5)
    net = {k: jnp.asarray(v) for k, v in genome.params.items()}
    policy = jax.jit(lambda o: activate(net, o[: p.n_inputs, None], genome.activations)[:, 0])
    return genome, lambda obs: np.asarray(policy(jnp.asarray(obs)))


def fly(env, policy, obs, ticks=None):
    """Step ``policy`` until the episode ends (or ``ticks``); positions, quaternions, rewards, last info."""
    pos, quat, rewards, info = [], [], [], {}
    while ticks is None or len(pos) < ticks:
        obs, r, term, trunc, info = env.step(policy(obs))
        pos.append(env.unwrapped.state.pos)
        quat.append(env.unwrapped.state.quat)
        rewards.append(r)
        if term or trunc:
            break
    return np.array(pos), np.array(quat), np.array(rewards), info


@pytest.mark.parametrize(
    "cls,kwargs",
    [
        (FlyHoverEnv, {"seconds": 0.3}),
        (FlySteerEnv, {"seconds": 0.5, "change_seconds": (0.1, 0.2)}),
        (FlyHoverEnv, {"seconds": 0.3, "asymmetric": True, "noise": 0.05}),
    ],
)
def test_passes_gymnasiums_checker(cls, kwargs):
    env = cls(**kwargs)
    check_env(env, skip_render_check=True)
    p = env.params
    assert (
        env.action_space.shape == (p.n_outputs,)
        and env.action_space.low.min() == -1
        and env.action_space.high.max() == 1
    )
    assert env.observation_space.shape == (p.n_inputs + (3 if cls is FlySteerEnv else 0),)


def test_registered_ids_make_the_environments():
    for env_id, cls, asym in (("animat/FlyHover-v0", FlyHoverEnv, False), ("animat/FlySteer-v0", FlySteerEnv, True)):
        env = gym.make(env_id, seconds=0.2)
        assert isinstance(env.unwrapped, cls) and env.unwrapped.params.asymmetric is asym
        obs, _ = env.reset(seed=0)
        assert env.observation_space.contains(obs)
    fly_env.register()  # again: no duplicate registration
    assert "animat/FlyHover-v0" in gym.registry


def test_a_tick_is_the_rollouts_tick_bit_for_bit_from_rest():
    """From rest (how replays fly a genome): the env stepped by a fixed network is simulate_population's flight."""
    env = FlyHoverEnv(seconds=3.0)
    genome, policy = fly_network(env)
    obs, _ = env.reset(seed=0, options={"start_scale": 0})
    pos, quat, rewards, info = fly(env, policy, obs)
    traj = simulate_population(env.params, {k: v[None] for k, v in genome.params.items()}, genome.activations, 3.0)
    assert len(pos) == 300 and not info["crashed"]
    np.testing.assert_array_equal(pos, traj.pos[0])
    np.testing.assert_array_equal(quat, traj.quat[0])
    # the summed reward is the GA's hover fitness of the same flight (float32 terms, summed in float64)
    assert rewards.sum() == pytest.approx(float(hover(traj.pos[0], traj.quat[0])), rel=1e-5)


def test_perturbed_starts_match_the_population_rollout_to_rounding():
    """From the perturbed starts of start_states, flown in one batch by simulate_population: XLA rounds a
    batch of four starts differently (last bits), so agreement is to 1e-5 u over 0.5 s (a wrong tick,
    e.g. one physics step more, moves the fly by ~1e-2 u in that time)."""
    env = FlyHoverEnv(seconds=0.5)
    genome, policy = fly_network(env)
    starts = start_states(env.params, 4, seed=7)
    traj = simulate_population(
        env.params, {k: v[None] for k, v in genome.params.items()}, genome.activations, 0.5, starts
    )
    for k in range(4):
        env.reset(seed=0)
        env.state = FlyState(*(np.asarray(x[k]) for x in starts))
        env.anchor = env.state.pos
        pos, _, _, _ = fly(env, policy, np.asarray(fly_env.observe(env.params, env.state, env.anchor)))
        np.testing.assert_allclose(pos, traj.pos[0, k], rtol=0, atol=1e-5)


def test_reset_is_deterministic_per_seed_and_starts_vary():
    env = FlyHoverEnv(seconds=0.2)
    _, policy = fly_network(env)
    runs = []
    for seed in (4, 4, 5):
        obs, _ = env.reset(seed=seed)
        runs.append((obs, *fly(env, policy, obs)[:3]))
    for a, b in zip(runs[0], runs[1]):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(runs[0][0], runs[2][0])  # another seed, another start
    # a drawn start is one of start_states' perturbed starts; scale 0 is start 0 (at rest)
    env.reset(seed=4, options={"start_scale": 0})
    assert not env.state.vel.any() and env.state.quat[0] == 1
    env.reset(seed=4)
    assert env.state.vel[0] == 0 and abs(env.state.vel[1:]).max() <= 0.5 and env.state.vel[1:].any()


def test_a_crash_terminates_counts_and_costs_the_rest_of_the_episode():
    env = FlyHoverEnv(FlyParams(max_speed=1e-3), seconds=0.1, start_scale=0)  # the first tick of free fall is a runaway
    env.reset(seed=0)
    obs, r, term, trunc, info = env.step(np.zeros(3, np.float32))
    assert term and not trunc and info["crashed"] and info["crashes"] == 1
    frozen = env.state  # a crashed fly keeps its last sane state: the start
    assert not frozen.pos.any()
    assert r == pytest.approx(-env.cost() / env.n_ticks * env.n_ticks)
    env.reset(seed=1)
    assert env.step(np.zeros(3, np.float32))[4]["crashes"] == 2


def test_steer_switches_commands_on_schedule_with_their_inputs():
    env = FlySteerEnv(seconds=0.5, script="up:0.2,left:0.1,hover:0.2", speed=2.0, start_scale=0)
    obs, info = env.reset(seed=0)
    np.testing.assert_allclose(obs[-3:], command_velocity("up", 2.0) / 10)
    assert info["command"] == "up"
    names = []
    for _ in range(50):
        obs, _, term, trunc, info = env.step(np.zeros(6, np.float32))
        names.append(info["command"])
        if info["command"] == "left" and names.count("left") == 1:
            assert not obs[:3].any()  # the new command's frame begins at the state just reached
            np.testing.assert_allclose(obs[-3:], command_velocity("left", 2.0) / 10)  # in the command frame
            np.testing.assert_allclose(info["command_direction"], direction("left", float(env.frame.yaw)), atol=1e-6)
    assert names[:19] == ["up"] * 19 and names[19:29] == ["left"] * 10 and names[29:49] == ["hover"] * 20
    assert trunc and not term
    # drawn scripts: deterministic per seed and covering the episode
    env = FlySteerEnv(seconds=6.0, change_seconds=(1.0, 2.0))
    env.reset(seed=3)
    first = list(env.schedule)
    env.reset(seed=3)
    assert env.schedule == first and first[0][0] == 0 and len(first) >= 3
    assert all(100 <= b[0] - a[0] <= 200 for a, b in zip(first, first[1:]))


def test_steer_observation_and_reward_are_the_goal_networks_training_bit_for_bit():
    """A goal network flown in FlySteer from rest flies as the steering GA's rollout does
    (animat.fly.steer.tracking.command_rollout, the same switches and command-frame velocities), and the
    episode's summed reward is that flight's tracking fitness (what the GA scores). Compiled apart, the
    two round differently in the last bit and a random network's flight amplifies it (measured: 7e-6 in
    the quaternion after 0.3 s, growing to 5e-3 after 1 s), so the flight is 0.3 s with a switch every
    0.1 s; a frame one tick off moves the reference point by 0.02 u, far beyond the tolerance."""
    env = FlySteerEnv(seconds=0.3, script="up:0.1,left:0.1,hover:0.1", speed=2.0, start_scale=0)
    p = env.params
    genome = Genome.random(jax.random.PRNGKey(5), [p.n_inputs + 3, 20, 20, p.n_outputs], 0.5)
    net = {k: jnp.asarray(v) for k, v in genome.params.items()}
    policy = jax.jit(lambda o: activate(net, o[:, None], genome.activations)[:, 0])
    obs, _ = env.reset(seed=0)
    pos, quat, rewards, info = fly(env, lambda o: np.asarray(policy(jnp.asarray(o))), obs)
    assert len(pos) == 30 and not info["crashed"] and [k for k, _ in env.schedule] == [0, 10, 20]
    switch = np.zeros(30, bool)
    cmd_vel = np.zeros((30, 3), np.float32)
    for (k, name), (k_next, _) in zip(env.schedule, env.schedule[1:] + [(30, None)]):
        switch[k], cmd_vel[k:k_next] = True, command_velocity(name, 2.0)
    start = FlyState(*(np.asarray(x[0]) for x in start_states(p, 1)))
    track = command_rollout(p, net, genome.activations, start, switch, cmd_vel, True)
    np.testing.assert_allclose(quat, np.asarray(track.quat), rtol=0, atol=1e-4)
    expected = float(tracking(np.asarray(track.error), cmd_vel, np.asarray(track.quat), p.body_length))
    assert rewards.sum() == pytest.approx(expected, rel=1e-3)
    assert abs(1 - quat[:, 0]).max() > 1e-3  # it turned: the comparison is not of a fly at rest


def test_steer_cost_is_the_tracking_fitness_per_tick():
    env = FlySteerEnv(seconds=1.0, script="forward:1", speed=2.0, across=0.5, start_scale=0)
    env.reset(seed=0)
    L, dt = env.params.body_length, env.params.control_dt
    env.tick = 10  # ten ticks into the command: the reference point is 2 u/s * 10 dt ahead along +y
    ahead = np.array([0.0, 2.0 * 10 * dt, 0.0], np.float32)
    env.state = env.state._replace(pos=ahead)
    assert env.cost() == pytest.approx(0.0, abs=1e-6)
    env.state = env.state._replace(pos=ahead + np.array([1.0, -3.0, 0.0], np.float32))  # 3 u behind, 1 u across
    assert env.cost() == pytest.approx((3.0 + 0.5 * 1.0) / L, rel=1e-5)
    env.reset(seed=0, options={"script": "hover:1"})
    env.tick = 10
    env.state = env.state._replace(pos=np.array([0.0, 0.0, 4.0], np.float32))  # hover: all of the error is "across"
    assert env.cost() == pytest.approx(0.5 * 4.0 / L, rel=1e-5)


def test_bad_options_are_one_line_errors():
    for kwargs in ({"seconds": 0}, {"start_scale": -1}, {"params": "paper"}):
        with pytest.raises(ConfigError):
            FlyHoverEnv(**kwargs)
    for kwargs in (
        {"speed": 0},
        {"change_seconds": (2.0, 1.0)},
        {"commands": ("sideways",)},
        {"script": "up:0"},
        {"across": -1},
    ):
        with pytest.raises(ConfigError):
            FlySteerEnv(**kwargs)
    with pytest.raises(ConfigError, match="unknown reset option"):
        FlyHoverEnv().reset(options={"speed": 1})


def test_ppo_learns_through_the_interface():
    """Stable-Baselines3 PPO (seed 0) trains on FlyHover for 2048 ticks and then hovers better than its own
    untrained start, the same network before ``learn``, flown deterministically from the same 8 reset seeds
    of a separate environment. Measured on 2026-12-06: untrained −1.216 on every seed (SB3 starts the action
    mean at about 0), learned −1.203 (+0.013; +0.01 to +0.03 on seeds 0–2 of PPO, rising with more ticks:
    +0.03 to +0.05 after 8192), no episode worse. Hence the bounds: the mean gains ≥ 0.005 and no episode loses
    more than 0.002; an environment whose action or reward does not reach PPO gains nothing. About 6 s."""
    pytest.importorskip("stable_baselines3")
    import torch
    from stable_baselines3 import PPO

    torch.set_num_threads(1)
    env = gym.make("animat/FlyHover-v0", seconds=1.0)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=512,
        batch_size=128,
        n_epochs=2,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [32, 32]},
    )
    judge = gym.make("animat/FlyHover-v0", seconds=1.0)

    def returns() -> np.ndarray:
        out = []
        for seed in range(100, 108):
            obs, _ = judge.reset(seed=seed)
            total, done, ticks = 0.0, False, 0
            while not done:
                action, _ = model.predict(obs, deterministic=True)
                assert judge.action_space.contains(action.astype(np.float32))
                obs, r, term, trunc, _ = judge.step(action)
                total, done, ticks = total + r, term or trunc, ticks + 1
            assert ticks == 100 and np.isfinite(total)
            out.append(total)
        return np.array(out)

    untrained = returns()
    model.learn(total_timesteps=2048)
    assert model.num_timesteps >= 2048
    losses = {k: v for k, v in model.logger.name_to_value.items() if "loss" in k}
    assert losses and all(np.isfinite(v) for v in losses.values())
    learned = returns()
    assert learned.mean() - untrained.mean() >= 0.005, (untrained, learned)
    assert (learned - untrained).min() >= -0.002, (untrained, learned)
