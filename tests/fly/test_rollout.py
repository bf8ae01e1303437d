"""Closed-loop flight: vacuum ballistics under any wing motion, random populations stay finite,
crash handling, the control loop, observations, fitness functions and the batched fitness object."""

from __future__ import annotations

import math
import pickle

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat.errors import ConfigError
from animat.evolve.network import activate, init_genes, unflatten
from animat.fly import tasks
from animat.fly.model import FlyParams
from animat.fly.physics import initial_state, step
from animat.fly.rollout import Trajectory, n_ticks_for, observe, rollout, simulate_population, wing_targets

P = FlyParams()
LAYERS = (15, 20, 20, 3)
ACTS = ("tanh", "tanh", "tanh")


def _nets(n, std, seed=0, layers=LAYERS):
    return unflatten(init_genes(jax.random.PRNGKey(seed), n, layers, std), layers)


# ---------------------------------------------------------------------------------------------
# 4. in vacuum the wings cannot move the centre of mass or turn the body


@pytest.mark.parametrize("std", [1.0, 30.0])
def test_vacuum_flight_is_ballistic_whatever_the_wings_do(std):
    params = P.with_(rho=0.0)
    net = jax.tree_util.tree_map(lambda a: a[0], _nets(1, std, seed=7))
    p0 = np.array([1.0, -2.0, 3.0], np.float32)
    v0 = np.array([0.5, -1.0, 2.0], np.float32)
    s0 = initial_state(pos=p0)._replace(vel=jnp.asarray(v0))
    n_ticks = 100  # 1 s
    final, traj = jax.jit(lambda s: rollout(params, net, ACTS, n_ticks, s))(s0)
    wing = np.asarray(traj.wing)
    assert wing[:, :, 0].std() > 0.05 and np.abs(np.diff(wing[:, 0, 0])).max() > 0.05  # the wings do flap
    t = (np.arange(n_ticks) + 1) * params.control_dt
    expected = p0 + v0 * t[:, None] - 0.5 * params.gravity * (t * t)[:, None] * np.array([0.0, 0.0, 1.0])
    err = np.abs(np.asarray(traj.pos, np.float64) - expected).max()
    print(f"vacuum, std {std}: max |pos − ballistic| = {err:.2e}")
    assert err < 2e-4  # float32 rounding of |pos| ~ 5 over 1000 steps; a 1e-3 u/s² force would be 5e-4
    np.testing.assert_allclose(np.asarray(traj.quat), np.broadcast_to([1.0, 0.0, 0.0, 0.0], traj.quat.shape), atol=1e-7)
    np.testing.assert_allclose(np.asarray(final.omega), 0.0, atol=1e-7)
    assert not np.any(np.asarray(traj.crashed))


# ---------------------------------------------------------------------------------------------
# 7. random networks never produce NaN or inf


def _check_population(params, n_per_std, seconds, stds=(0.1, 1.0, 30.0)):
    genes = jnp.concatenate(
        [init_genes(jax.random.PRNGKey(100 + i), n_per_std, LAYERS, std) for i, std in enumerate(stds)]
    )
    traj = simulate_population(params, unflatten(genes, LAYERS), ACTS, seconds)
    T = n_ticks_for(params, seconds)
    assert traj.pos.shape == (len(stds) * n_per_std, T, 3) and traj.wing.shape == (len(stds) * n_per_std, T, 2, 3)
    bad = {name: int((~np.isfinite(getattr(traj, name))).sum()) for name in ("pos", "quat", "wing")}
    crashed = traj.crashed[:, -1].reshape(len(stds), n_per_std).sum(axis=1)
    print(
        f"control {params.control_dt * 1e3:g} ms, {n_per_std} nets × std {stds} × {seconds} s: "
        f"non-finite {bad}, crashed per std {crashed.tolist()}, max |pos| {np.abs(traj.pos).max():.1f}"
    )
    assert sum(bad.values()) == 0
    # orientation stays a unit quaternion, wings stay within their limits
    assert np.abs(np.linalg.norm(traj.quat, axis=-1) - 1.0).max() < 1e-5
    assert np.all(np.abs(traj.wing) <= np.asarray(params.angle_limits) + 1e-6)
    # a crash is final and freezes the fly where it was
    first = np.where(traj.crashed.any(axis=1), traj.crashed.argmax(axis=1), T)
    assert np.all(traj.crashed == (np.arange(T)[None, :] >= first[:, None]))
    for i in np.flatnonzero(first < T):
        assert np.all(traj.pos[i, first[i] :] == traj.pos[i, first[i]])
    # the random-network population is not a crash festival (crashes are runaways, not NaNs)
    assert crashed.sum() <= 0.05 * len(stds) * n_per_std
    return traj


@pytest.mark.parametrize("control_dt", [0.001, 0.002, 0.005, 0.01])
def test_random_networks_stay_finite(control_dt):
    """Reduced size for the default suite (40 networks per std × 30 s); the full 1000 is a slow test."""
    _check_population(P.with_(control_dt=control_dt), 40, 30.0)


@pytest.mark.slow
@pytest.mark.parametrize("std", [0.1, 1.0, 30.0])
@pytest.mark.parametrize("control_dt", [0.001, 0.002, 0.005, 0.01])
def test_1000_random_networks_stay_finite(control_dt, std):
    """1000 random networks × 30 s per (control interval, weight std): about 2 min each on 2 CPU cores,
    up to ~2 GB of trajectory at 1 ms control (one std at a time to bound memory)."""
    _check_population(P.with_(control_dt=control_dt), 1000, 30.0, stds=(std,))


# ---------------------------------------------------------------------------------------------
# crash handling


def test_runaway_crash_freezes_the_fly():
    """Free fall in vacuum with max_speed 5 u/s: the step that would reach g t >= 5 (step 510) crashes,
    and the fly keeps its state after step 509 from then on."""
    params = P.with_(rho=0.0, max_speed=5.0)
    net = jax.tree_util.tree_map(lambda a: a[0] * 0.0, _nets(1, 1.0))  # outputs 0: wings held level
    _, traj = rollout(params, net, ACTS, 80, initial_state())
    crashed = np.asarray(traj.crashed)
    k = int(math.ceil(5.0 / params.gravity / params.dt))  # first step with |v| >= 5
    tick = (k - 1) // params.steps_per_control
    assert not crashed[:tick].any() and crashed[tick:].all()
    z_frozen = -0.5 * params.gravity * ((k - 1) * params.dt) ** 2
    np.testing.assert_allclose(np.asarray(traj.pos)[tick:, 2], z_frozen, rtol=1e-4)
    t = (np.arange(tick) + 1) * params.control_dt
    np.testing.assert_allclose(np.asarray(traj.pos)[:tick, 2], -0.5 * params.gravity * t * t, rtol=1e-4, atol=1e-6)
    fit = tasks.score(Trajectory(*(np.asarray(x)[None] for x in traj)), "final-height")
    assert np.isnan(fit).all()


# ---------------------------------------------------------------------------------------------
# the control loop


def test_rollout_matches_a_hand_loop():
    """rollout = every control tick: observe, network, targets, then steps_per_control physics steps."""
    params = P.with_(control_dt=0.005)
    net = jax.tree_util.tree_map(lambda a: a[0], _nets(1, 1.0, seed=3))
    s0 = initial_state(pos=(0.0, 0.0, 2.0))
    n_ticks = 6
    final, traj = rollout(params, net, ACTS, n_ticks, s0)
    step_j = jax.jit(lambda s, t: step(params, s, t))
    s = s0
    for k in range(n_ticks):
        target = wing_targets(params, activate(net, observe(params, s, s0.pos)[:, None], ACTS)[:, 0])
        for _ in range(params.steps_per_control):
            s = step_j(s, target)
        np.testing.assert_allclose(np.asarray(traj.pos[k]), np.asarray(s.pos), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(traj.wing[k]), np.asarray(s.wing), atol=1e-6)
    np.testing.assert_allclose(np.asarray(final.vel), np.asarray(s.vel), rtol=1e-4, atol=1e-5)


def test_population_matches_single_rollouts():
    nets = _nets(3, 1.0, seed=11)
    traj = simulate_population(P, nets, ACTS, 0.2)
    assert traj.pos.shape == (3, 20, 3) and traj.quat.shape == (3, 20, 4) and traj.crashed.shape == (3, 20)
    for i in range(3):
        net = jax.tree_util.tree_map(lambda a: a[i], nets)
        # jitted like the population (an eager run rounds differently, and a random network's closed
        # loop amplifies float32 rounding by ~1e4 within 0.2 s)
        _, single = jax.jit(lambda n: rollout(P, n, ACTS, 20, initial_state()))(net)
        np.testing.assert_allclose(traj.pos[i], np.asarray(single.pos), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(traj.wing[i], np.asarray(single.wing), atol=1e-5)


def test_observe_and_wing_targets():
    s = initial_state(pos=(4.0, 0.0, 2.0), wing=np.array([[0.5, -0.2, 0.1], [0.0, 0.0, 0.0]], np.float32))
    s = s._replace(vel=jnp.array([10.0, 0.0, -20.0]), omega=jnp.array([0.0, 5.0, 0.0]))
    obs = np.asarray(observe(P, s, jnp.array([0.0, 0.0, 2.0])))
    assert obs.shape == (P.n_inputs,) == (15,)
    lim = np.asarray(P.angle_limits)
    np.testing.assert_allclose(
        obs, [1.0, 0, 0, 0, 0, 0, 1.0, 0, -2.0, 0, 0.5, 0, 0.5 / lim[0], -0.2 / lim[1], 0.1 / lim[2]], atol=1e-6
    )
    t = np.asarray(wing_targets(P, jnp.array([0.5, -3.0, 1.0])))
    np.testing.assert_allclose(t, [[0.5 * lim[0], -lim[1], lim[2]]] * 2, rtol=1e-6)
    asym = P.with_(asymmetric=True)
    assert asym.n_inputs == 18 and asym.n_outputs == 6
    assert observe(asym, s, s.pos).shape == (18,)
    t = np.asarray(wing_targets(asym, jnp.array([1.0, 0.0, 0.0, -1.0, 0.5, 0.0])))
    np.testing.assert_allclose(t, [[lim[0], 0, 0], [-lim[0], 0.5 * lim[1], 0]], rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# fitness


def _hand_trajectory():
    pos = np.array(
        [
            [[0.0, 0.0, 1.0], [1.0, -1.0, 2.0], [-2.0, 3.0, 3.0], [0.0, 0.0, 6.0]],
            [[0.0, 0.0, -1.0], [0.0, 0.0, -2.0], [0.0, 0.0, -3.0], [0.0, 0.0, -2.0]],
        ]
    )
    crashed = np.zeros((2, 4), bool)
    return Trajectory(pos, np.zeros((2, 4, 4)), np.zeros((2, 4, 2, 3)), crashed)


def test_fitness_functions_closed_form():
    traj = _hand_trajectory()
    np.testing.assert_allclose(tasks.mean_height(traj.pos), [3.0, -2.0])
    np.testing.assert_allclose(tasks.final_height(traj.pos), [6.0, -2.0])
    drift0 = (0 + 1 + 2 + 0) / 4 + (0 + 1 + 3 + 0) / 4
    np.testing.assert_allclose(tasks.lateral(traj.pos), [6.0 - drift0 / 5, -2.0])
    np.testing.assert_allclose(tasks.score(traj, "mean-height"), [3.0, -2.0])
    crashed = traj.crashed.copy()
    crashed[1, 2:] = True
    s = tasks.score(traj._replace(crashed=crashed), "lateral")
    assert s[0] == pytest.approx(6.0 - drift0 / 5) and np.isnan(s[1])
    with pytest.raises(ConfigError):
        tasks.fitness_function("no-such-fitness")
    # hover, upright: −(mean |z| + drift / 5); upside down adds 4 · 2
    up = np.broadcast_to([1.0, 0.0, 0.0, 0.0], (2, 4, 4))
    down = np.broadcast_to([0.0, 1.0, 0.0, 0.0], (2, 4, 4))
    np.testing.assert_allclose(tasks.hover(traj.pos, up), [-(3.0 + drift0 / 5), -2.0])
    np.testing.assert_allclose(tasks.hover(traj.pos, down), [-(3.0 + drift0 / 5) - 8.0, -10.0])


def test_fly_fitness_is_deterministic_and_validated():
    fit = tasks.FlyFitness(P, 0.3, "lateral", ACTS)
    genes = init_genes(jax.random.PRNGKey(2), 5, LAYERS, 1.0)
    nets = unflatten(genes, LAYERS)
    a = fit(nets)
    b = fit(unflatten(jnp.array(np.asarray(genes)), LAYERS))
    assert a.shape == (5,) and a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(fit))(nets), a)
    expected = tasks.score(simulate_population(P, nets, ACTS, 0.3), "lateral")
    np.testing.assert_array_equal(a, expected)
    assert len(set(a.tolist())) == 5  # different networks fly differently
    with pytest.raises(ConfigError):
        tasks.FlyFitness(P, 1.0, "no-such-fitness", ACTS)
    with pytest.raises(ConfigError):
        tasks.FlyFitness(P, 0.0, "lateral", ACTS)
    with pytest.raises(ConfigError):
        tasks.FlyFitness(P, -1.0, "mean-height", ACTS)


def test_fitness_does_not_depend_on_batch_size():
    from animat.fly.tasks import FlyFitness

    """A genome scores bit-identically alone, in a small batch and in a large one, so a replay or a Ray
    chunk reproduces training exactly even though random-network flights are chaotic."""
    from animat.evolve import network as nw

    layers = [15, 20, 20, 3]
    genes = np.asarray(nw.init_genes(jax.random.PRNGKey(7), 37, layers, 1.0))
    fit = FlyFitness(FlyParams(), 2.0, "lateral", ("tanh",) * 3, starts=2, seed=3, noise=0.05)
    full = fit(nw.unflatten(genes, layers))
    for lo, hi in [(0, 1), (5, 6), (36, 37), (3, 8)]:
        np.testing.assert_array_equal(fit(nw.unflatten(genes[lo:hi], layers)), full[lo:hi])


def test_start_zero_is_at_rest_and_sensor_noise_reaches_only_the_perturbed_starts():
    """start_states: start 0 at rest, level, wings at zero, at the origin; the others perturbed. sensor_noise:
    zero for start 0, std ``std`` on the others. So a fly's flight from start 0 is its noise-free flight from rest,
    whatever the noise, and the perturbed starts fly differently."""
    from animat.fly.rollout import sensor_noise, start_states

    s = start_states(P, 4, seed=3)
    assert s.pos.shape == (4, 3) and not s.pos.any() and not s.crashed.any()
    assert (
        not s.vel[0].any() and not s.omega[0].any() and not s.wing[0].any() and np.array_equal(s.quat[0], [1, 0, 0, 0])
    )
    assert all(s.vel[i].any() and s.omega[i].any() and s.wing[i].any() and s.quat[i, 0] < 1 for i in (1, 2, 3))
    noise = sensor_noise(P, 4, 500, 0.2, seed=3)
    assert noise.shape == (4, 500, P.n_inputs) and not noise[0].any()
    assert all(abs(noise[i].std() - 0.2) < 0.01 for i in (1, 2, 3))

    nets = _nets(3, 1.0, seed=5)
    n = n_ticks_for(P, 0.3)
    noisy = simulate_population(P, nets, ACTS, 0.3, start_states(P, 3, seed=1), sensor_noise(P, 3, n, 0.5, seed=1))
    quiet = simulate_population(P, nets, ACTS, 0.3, start_states(P, 3, seed=1))  # the same starts without noise
    assert noisy.pos.shape == (3, 3, n, 3)
    np.testing.assert_array_equal(noisy.pos[:, 0], quiet.pos[:, 0])  # start 0 flies noise-free
    np.testing.assert_array_equal(noisy.quat[:, 0], quiet.quat[:, 0])
    assert all(
        not np.allclose(noisy.pos[:, i], quiet.pos[:, i], atol=1e-4) for i in (1, 2)
    )  # the others hear the noise
    # start 0 is the flight from rest (batched with other starts, XLA rounds differently: close, not bitwise;
    # how differently depends on the CPU, and these random networks amplify it: 3e-6 m after 0.1 s, 3e-3 m
    # after 0.3 s on one x86 machine, under 1e-3 m on another; so the first 0.1 s)
    alone = simulate_population(P, nets, ACTS, 0.3)
    np.testing.assert_allclose(quiet.pos[:, 0, :10], alone.pos[:, :10], atol=1e-4)
    assert not np.allclose(quiet.pos[:, 1], alone.pos, atol=1e-2)  # a perturbed start flies elsewhere
