"""The fruit fly in free flight (float32): vacuum ballistics whatever the wings do, terminal velocity of
the body, step-size independence of the flight force, the pattern generator's continuity across its
once-per-wingbeat updates, the wingbeat frequency the network sets, and random networks staying finite."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat.evolve.network import init_genes, unflatten
from animat.fly.drosophila import pattern
from animat.fly.drosophila.model import N_PATTERN, DrosophilaParams
from animat.fly.drosophila.physics import initial_state, pitch_quat, step
from animat.fly.drosophila.rollout import N_INPUTS, chunk_size, decide, simulate_population, start_states

P = DrosophilaParams()
DEG = math.pi / 180.0
LAYERS = (N_INPUTS, 16, N_PATTERN)
ACTS = ("tanh", "tanh")


def hover_pattern(f=218.0, amplitude=150.0, alpha_mid=45.0):
    """Both wings: the hover-like kinematics of test_drosophila_aero.hover_pattern."""
    wing = [amplitude * DEG, 0.0, 0.0, (90.0 - alpha_mid) * DEG, 0.0]
    return np.array([f] + wing + wing, np.float32)


def _nets(n, std, seed=0):
    return unflatten(init_genes(jax.random.PRNGKey(seed), n, LAYERS, std), LAYERS)


@functools.partial(jax.jit, static_argnums=(0, 2))
def _fly_pattern(params, state, n_steps):
    """Fly ``n_steps`` physics steps keeping the state's (steady: p_from = p_to) pattern, which then beats
    on at its frequency without updates; returns the final state and the velocity after every step
    ``(n_steps, 3)``."""

    def one_step(s, _):
        s = step(params, s)
        return s, s.vel

    return jax.lax.scan(one_step, state, None, length=n_steps)


# ---------------------------------------------------------------------------------------------
# vacuum and drag


@pytest.mark.parametrize("seed", [0, 1])
def test_in_vacuum_the_fly_falls_exactly_whatever_its_wings_do(seed):
    """ρ = 0: no air force, so the body is ballistic — z = z0 + v0 t − g t²/2, no rotation — under any
    beating pattern."""
    params = P.with_(rho=0.0)
    rng = np.random.default_rng(seed)
    p = np.asarray(pattern.from_outputs(jnp.asarray(rng.uniform(-1, 1, N_PATTERN), jnp.float32)))
    v0 = np.array([0.01, -0.02, 0.03], np.float32)
    s0 = initial_state(params, p, pos=(1e-3, -2e-3, 0.05), vel=v0)
    n_steps = 2000  # 0.2 s
    s, _ = _fly_pattern(params, s0, n_steps)
    t = n_steps * params.dt
    expected = np.array([1e-3, -2e-3, 0.05]) + v0 * t - np.array([0.0, 0.0, 0.5 * params.gravity * t * t])
    err = np.abs(np.asarray(s.pos, np.float64) - expected).max()
    print(f"vacuum 0.2 s: |pos − ballistic| = {err:.2e} m of a {0.5 * params.gravity * t * t:.3f} m drop")
    assert err < 3e-5 * 0.5 * params.gravity * t * t  # float32 rounding of 2 000 position updates
    acc = (np.asarray(s.vel, np.float64) - v0) / t  # float32: 2 000 adds of g dt round by ~1e-7 each
    np.testing.assert_allclose(acc, [0.0, 0.0, -params.gravity], rtol=5e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(s.quat), pitch_quat(params.stroke_plane_angle), atol=1e-7)
    np.testing.assert_array_equal(np.asarray(s.omega), 0.0)


@pytest.mark.parametrize("std", [1.0, 30.0])
def test_closed_loop_flight_in_vacuum_is_ballistic(std):
    """Any network, any pattern it chooses: without air the centre of mass falls freely."""
    params = P.with_(rho=0.0)
    traj = simulate_population(params, _nets(8, std, seed=3), ACTS, 0.1)
    t = (np.arange(traj.pos.shape[1]) + 1) * params.sample_dt
    np.testing.assert_allclose(
        traj.pos[..., 2], np.broadcast_to(-0.5 * params.gravity * t * t, traj.pos.shape[:2]), rtol=2e-5, atol=1e-9
    )
    np.testing.assert_allclose(traj.pos[..., :2], 0.0, atol=1e-9)
    assert not traj.crashed.any() and np.all(traj.power == 0.0)


def test_body_with_still_wings_and_no_wing_forces_reaches_its_terminal_velocity():
    """Wing forces off, body in the hover posture falling: m g = ½ρ C_D (A_x sin χ + A_z cos χ) v² with
    χ the body pitch (the drag acts through the centre of mass, so the posture stays)."""
    params = P.with_(translational=False, rotational=False, added_mass=False)
    s, vel = _fly_pattern(params, initial_state(params, hover_pattern()), 20000)  # 2 s
    chi = params.stroke_plane_angle
    areas = params.body_areas()
    v_term = math.sqrt(
        2 * params.weight / (params.rho * params.cd_body * (areas[0] * math.sin(chi) + areas[2] * math.cos(chi)))
    )
    print(f"terminal velocity {-float(s.vel[2]):.4f} m/s, closed form {v_term:.4f}")
    np.testing.assert_allclose(-float(s.vel[2]), v_term, rtol=1e-3)
    np.testing.assert_allclose(np.asarray(s.quat), pitch_quat(chi), atol=1e-6)


# ---------------------------------------------------------------------------------------------
# step size


def test_halving_the_step_changes_the_mean_flight_force_by_under_two_percent():
    """Hover-like kinematics (217.4 Hz, so a beat is 4.6 ms, a whole number of steps at every dt), free
    flight from the hover posture for 10 beats: the mean vertical force m (Δv_z / T + g) at dt = 0.1,
    0.05 and 0.025 ms."""
    f = 1.0 / 4.6e-3
    means = []
    for dt in (1e-4, 5e-5, 2.5e-5):
        params = P.with_(dt=dt)
        n_steps = int(round(10 * 4.6e-3 / dt))
        s, _ = _fly_pattern(params, initial_state(params, hover_pattern(f=f)), n_steps)
        means.append(params.mass * (float(s.vel[2]) / (n_steps * dt) + params.gravity))
    ratios = np.array(means) / P.weight
    changes = np.abs(np.diff(means)) / np.abs(means[1:])
    print(f"mean vertical force / weight at 0.1, 0.05, 0.025 ms: {ratios}; changes {changes}")
    assert 0.8 < ratios[0] < 1.6
    assert np.all(changes < 0.02)


# ---------------------------------------------------------------------------------------------
# pattern generator


def test_pattern_angles_and_rates_are_continuous_across_updates():
    """Random parameter jumps at every update: each blend lasts exactly one beat (the phase advances by
    2π over its period), and the angles and their time derivatives where one beat ends (up to a step past
    its period, as in the rollout) equal those at the start of the next (float32 rounding), while within a
    beat they move."""
    rng = np.random.default_rng(0)
    C = P.rotation_sharpness
    draw = lambda: pattern.from_outputs(jnp.asarray(rng.uniform(-1, 1, N_PATTERN), jnp.float32))
    state = pattern.start(draw())
    with_rates = lambda s, t: jax.jvp(lambda x: pattern.angles(s, C, x), (jnp.float32(t),), (jnp.float32(1.0),))
    for i in range(20):
        state = pattern.advance(state, pattern.beat_period(state), draw())
        T = float(pattern.beat_period(state))
        np.testing.assert_allclose(float(pattern.phase(state, T) - state.psi0), 2 * math.pi, rtol=1e-6)
        assert not pattern.beat_done(state, 0.999 * T) and pattern.beat_done(state, T)
        t_end = T + (i % 3) * 0.5 * P.dt  # the rollout notices the end after the step that passes it
        end_a, end_r = with_rates(state, t_end)
        nxt = pattern.advance(state, t_end, draw())
        start_a, start_r = with_rates(nxt, 0.0)
        scale_r = float(jnp.abs(end_r).max()) + 1.0
        np.testing.assert_allclose(np.asarray(start_a), np.asarray(end_a), atol=2e-5)
        np.testing.assert_allclose(np.asarray(start_r), np.asarray(end_r), atol=2e-5 * scale_r)
        mid_a, _ = with_rates(state, 0.5 * T)
        assert float(jnp.abs(mid_a - end_a).max()) > 1e-3
        state = nxt


def test_recorded_wing_angles_are_smooth_through_network_updates():
    """A closed loop with large random weights, wing angles every step: updates come at the end of each
    beat, where the stroke is at its most backward (phase 0); the step-to-step change of the angular
    velocity there is no larger than the largest elsewhere (no jumps)."""
    traj = simulate_population(P, _nets(4, 5.0, seed=1), ACTS, 0.05, wing_every=1)
    w = traj.wing.reshape(traj.wing.shape[0], -1, 2, 3).astype(np.float64)  # (P, steps, 2, 3)
    rate = np.diff(w, axis=1) / P.dt
    jump = np.abs(np.diff(rate, axis=1))  # index i: rate change around step i + 1
    assert traj.pattern[:, 1:, 0].std() > 1.0  # the network does change its frequency
    for fly in range(w.shape[0]):
        stroke = w[fly, :, 0, 0]
        minima = np.nonzero((stroke[1:-1] < stroke[:-2]) & (stroke[1:-1] <= stroke[2:]))[0]
        near = np.zeros(jump.shape[1], bool)
        for m in minima:
            near[max(m - 2, 0) : m + 3] = True
        assert near.any() and (~near).any()
        assert jump[fly, near].max() <= 1.5 * jump[fly, ~near].max()


def test_the_network_acts_once_per_wingbeat():
    """Constant outputs (zero weights, biases b): the network updates at the start and then once per beat
    of its frequency f; each beat ends at most one step late, so 0.5 s holds between 0.5 f / (1 + f dt)
    and 0.5 f beats after the first."""
    nets = jax.tree_util.tree_map(jnp.zeros_like, _nets(3, 1.0))
    b = np.zeros((3, N_PATTERN, 1), np.float32)
    b[:, 0, 0] = [-0.8, 0.0, 0.9]
    nets["b2"] = jnp.asarray(b)
    traj = simulate_population(P, nets, ACTS, 0.5)
    f = np.asarray(pattern.from_outputs(jnp.tanh(jnp.asarray(b[:, :, 0]))))[:, 0]
    beats = traj.updates[:, -1] - 1
    print(f"frequency {f} Hz: {beats} updates after the first in 0.5 s")
    assert np.all(beats >= np.floor(0.5 * f / (1 + f * P.dt))) and np.all(beats <= np.ceil(0.5 * f))
    assert np.all(np.diff(traj.updates, axis=1) >= 0)
    # control_dt 5 ms: at the first beat end in each 5 ms, so every beat below 200 Hz and once per 5 ms above
    paced = simulate_population(P.with_(control_dt=5e-3), nets, ACTS, 0.5).updates[:, -1] - 1
    print(f"with control_dt 5 ms: {paced}")
    np.testing.assert_array_equal(paced[f < 200], beats[f < 200])
    assert np.all(np.abs(paced[f > 200] - 100) <= 1) and np.all(beats[f > 200] > paced[f > 200])


def test_the_networks_answer_exactly_the_flies_that_act_in_chunks_of_any_size():
    """decide: the targets are the policy's rows for the acting flies and the defaults elsewhere, whether
    none, a few or all of 37 flies act in one step and whatever the chunk (one evaluation or many)."""
    rng = np.random.default_rng(0)
    default = jnp.asarray(rng.normal(size=(37, N_PATTERN)), jnp.float32)
    answers = jnp.asarray(rng.normal(size=(37, N_PATTERN)), jnp.float32)
    policy = lambda idx: answers[idx] + 0.0 * idx[:, None]
    for fraction in (0.0, 0.1, 0.5, 1.0):
        acts = jnp.asarray(rng.random(37) < fraction)
        for chunk in (1, 4, chunk_size(37), 37):
            got = jax.jit(decide, static_argnums=(0, 3))(policy, acts, default, chunk)
            np.testing.assert_array_equal(got, np.where(np.asarray(acts)[:, None], answers, default))


def test_copies_of_one_network_fly_alike_when_all_their_beats_end_together():
    """40 flies, two networks' 20 copies each interleaved, from one start: every beat ends for 20 flies
    at once, five chunks of networks (:func:`chunk_size` 4); each copy flies exactly as its network's first."""
    nets = _nets(2, 1.0, seed=3)
    many = jax.tree_util.tree_map(lambda a: jnp.concatenate([a] * 20), nets)
    traj = simulate_population(P, many, ACTS, 0.03)
    assert chunk_size(40) == 4 and traj.updates[0, -1] > 2
    for k in range(2):
        np.testing.assert_array_equal(traj.pos[k::2], np.broadcast_to(traj.pos[k], traj.pos[k::2].shape))
        np.testing.assert_array_equal(traj.updates[k::2], np.broadcast_to(traj.updates[k], traj.updates[k::2].shape))
    assert not np.array_equal(traj.pos[0], traj.pos[1])


def test_wingbeat_frequency_from_the_stroke_spectrum_is_the_one_the_network_sets():
    """Zero weights and biases b: the pattern is from_outputs(tanh b); the FFT peak of the recorded stroke
    angle (sampled at 2 kHz) is that frequency."""
    nets = jax.tree_util.tree_map(jnp.zeros_like, _nets(2, 1.0))
    b = np.zeros((2, N_PATTERN, 1), np.float32)
    b[:, 0, 0] = [-0.05, 0.3]
    nets["b2"] = jnp.asarray(b)
    traj = simulate_population(P, nets, ACTS, 0.5, wing_every=5)
    stroke = traj.wing[..., 0, 0].reshape(2, -1)
    fs = 1.0 / (5 * P.dt)
    spectrum = np.abs(np.fft.rfft(stroke - stroke.mean(1, keepdims=True), axis=1))
    peak = np.fft.rfftfreq(stroke.shape[1], 1 / fs)[spectrum.argmax(1)]
    expected = np.asarray(pattern.from_outputs(jnp.tanh(jnp.asarray(b[:, :, 0]))))[:, 0]
    np.testing.assert_allclose(peak, expected, atol=1.0 / 0.5)  # FFT resolution 2 Hz


# ---------------------------------------------------------------------------------------------
# random networks


@pytest.mark.parametrize("std", [1.0, 10.0])
def test_random_networks_stay_finite(std):
    """200 random networks for 0.2 s from perturbed starts: no NaN, few runaways (the full 1 000 × 1 s
    check is the slow test below)."""
    starts = start_states(P, 2, seed=4)
    traj = simulate_population(P, _nets(100, std, seed=2), ACTS, 0.2, starts=starts)
    assert np.isfinite(traj.pos).all() and np.isfinite(traj.quat).all() and np.isfinite(traj.power).all()
    assert traj.crashed[..., -1].mean() < 0.05


@pytest.mark.slow
def test_thousand_random_networks_fly_one_second_without_nan():
    traj = simulate_population(P, _nets(1000, 1.0, seed=5), ACTS, 1.0)
    assert np.isfinite(traj.pos).all() and np.isfinite(traj.quat).all() and np.isfinite(traj.power).all()
    print(f"crashed (runaway) {int(traj.crashed[:, -1].sum())} of 1000")
    assert traj.crashed[:, -1].mean() < 0.05
