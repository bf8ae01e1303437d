"""Closed-loop flight of the fruit fly: at the end of every wingbeat the network observes the fly and
sets the wingbeat pattern generator's parameters for the next beat (:mod:`animat.fly.drosophila.pattern`).

A beat's length is the network's choice (1/400 to 1/50 s), so the rollout checks for the beat's end after
every physics step. With ``params.control_dt`` > 0 the network acts only at the first beat end in each
``control_dt`` (a fixed sensorimotor pace: at every beat below ``1 / control_dt`` Hz, at about every other
one above twice that); a beat it skips repeats the last pattern. The flight is recorded every
``sample_dt`` (5 ms): ``lax.scan`` over samples with an inner ``lax.scan`` over physics steps; a
population is the same function under ``vmap``, one jitted call for every fly and start.

The observation averages the velocity and angular velocity over exactly the beats since the network last
acted, and reads the position and attitude at the same phase of every beat, so the within-beat
oscillation of the body does not reach the network. (An earlier fixed 5 ms control tick, 1.1 beats at
220 Hz, left part of a beat's oscillation in each average, aliased to a slow ripple that shrinks as the
frequency rises: networks evolved under it beat at about 1.9 beats a tick, 375–382 Hz at 5 ms, 290 Hz
at 6.5 ms, 396 Hz at 4.5 ms; issue 22's notes of 2026-12-03.)
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from animat.evolve.network import activate
from animat.fly.drosophila import pattern
from animat.fly.drosophila.model import N_PATTERN, DrosophilaParams
from animat.fly.drosophila.physics import (
    DrosophilaState,
    beat_done,
    initial_state,
    pitch_quat,
    set_pattern,
    step_with_power,
    stroke_plane_quat,
    wing_angles,
)
from animat.rotations import euler_xyz, quat_mul

N_INPUTS = 12
N_OUTPUTS = N_PATTERN
VEL_SCALE = 0.1  # m/s per unit of network input
OMEGA_SCALE = 10.0  # rad/s per unit of network input


class Trajectory(NamedTuple):
    """Recorded every ``sample_dt``: pos (T, 3) m, quat (T, 4), crashed (T,), the wings' mean aerodynamic
    power over the sample interval power (T,) W, the pattern parameters the network last set pattern
    (T, 11) (Hz, rad), the network updates (= wingbeats begun) so far updates (T,), and the wing angles
    wing (T, M, 2, 3) rad, body positions fine_pos (T, M, 3) m and orientations fine_quat (T, M, 4) every
    ``wing_every`` steps, at the start of each (M = 0 when not recorded)."""

    pos: jax.Array
    quat: jax.Array
    crashed: jax.Array
    power: jax.Array
    pattern: jax.Array
    updates: jax.Array
    wing: jax.Array
    fine_pos: jax.Array
    fine_quat: jax.Array


def observe(params: DrosophilaParams, state: DrosophilaState, start, vel, omega) -> jax.Array:
    """Network input ``(12,)``: position relative to ``start`` in body lengths, the stroke plane's
    orientation (ZYX Euler angles, rad; zero in the hover posture), and the velocity (world, per 0.1 m/s)
    and body angular velocity (per 10 rad/s) averaged over the beats since the last update (``vel``, ``omega``)."""
    return jnp.concatenate(
        [
            (state.pos - start) / params.body_length,
            euler_xyz(stroke_plane_quat(params, state.quat)),
            vel / VEL_SCALE,
            omega / OMEGA_SCALE,
        ]
    )


def n_updates_for(seconds: float) -> int:
    """The most network updates ``seconds`` of flight can take (one at the start, one per beat at up to
    :data:`pattern.F_MAX`): the length of the sensor-noise sequence."""
    return int(np.ceil(seconds * pattern.F_MAX)) + 2


def rollout(
    params: DrosophilaParams,
    net,
    activations: Sequence[str],
    n_ticks: int,
    state0: DrosophilaState,
    noise=None,
    wing_every: int = 0,
):
    """Fly one network for ``n_ticks`` samples of ``sample_dt`` from ``state0`` (its pattern is replaced by
    the network's first choice, so the fly starts beating as it means to go on); returns (final state,
    Trajectory). ``noise (U, 12)``: sensor noise added to the network's successive observations (U ≥
    :func:`n_updates_for` the flight's seconds; the first observation gets ``noise[0]``)."""
    n_steps = params.steps_per_sample
    if wing_every and n_steps % wing_every:
        raise ValueError(f"wing_every ({wing_every}) must divide the {n_steps} steps of a sample")
    if noise is None:
        noise = jnp.zeros((n_updates_for(n_ticks * params.sample_dt), N_INPUTS), jnp.float32)
    last = noise.shape[0] - 1

    def policy(state, vel, omega, obs_noise):
        obs = observe(params, state, state0.pos, vel, omega) + obs_noise
        return pattern.from_outputs(activate(net, obs[:, None], activations)[:, 0])

    per_control = params.steps_per_control

    def physics_step(carry, _):
        # vel, omega: sums since the network last acted, at step g_last (so over g - g_last steps)
        state, vel, omega, updates, g, g_last, power = carry
        new, p = step_with_power(params, state)
        vel, omega, g = vel + new.vel, omega + new.omega, g + 1
        n = (g - g_last).astype(jnp.float32)
        done = beat_done(params, new)
        acts = done & ((g // per_control > g_last // per_control) if per_control else True)
        target = jnp.where(acts, policy(new, vel / n, omega / n, noise[jnp.minimum(updates, last)]), new.pattern.p_to)
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), set_pattern(params, new, target), new)
        keep = jnp.where(acts, 0.0, 1.0)
        carry = (
            new,
            vel * keep,
            omega * keep,
            updates + acts.astype(updates.dtype),
            g,
            jnp.where(acts, g, g_last),
            power + p,
        )
        return carry, (wing_angles(params, state), state.pos, state.quat)

    def tick(carry, _):
        (state, vel, omega, updates, g, g_last, power), (wings, fine_pos, fine_quat) = jax.lax.scan(
            physics_step, (*carry, jnp.float32(0.0)), None, length=n_steps
        )
        keep = slice(None, None, wing_every) if wing_every else slice(0, 0)
        record = Trajectory(
            state.pos,
            state.quat,
            state.crashed,
            power / n_steps,
            state.pattern.p_to,
            updates,
            wings[keep],
            fine_pos[keep],
            fine_quat[keep],
        )
        return (state, vel, omega, updates, g, g_last), record

    first = policy(state0, state0.vel, state0.omega, noise[0])
    state0 = state0._replace(pattern=pattern.start(first)._replace(psi0=state0.pattern.psi0))
    zero = jnp.zeros(3, jnp.float32)
    carry = (state0, zero, zero, jnp.int32(1), jnp.int32(0), jnp.int32(0))
    (state, *_), traj = jax.lax.scan(tick, carry, None, length=n_ticks)
    return state, traj


@functools.lru_cache(maxsize=32)
def population_rollout(params: DrosophilaParams, activations: tuple[str, ...], n_ticks: int, wing_every: int = 0):
    """Jitted ``(nets (P, ...) stacked tree, starts: DrosophilaState (S, ...), noise (S, U, 12)) ->
    Trajectory (P, S, T, ...)``: every network flies from every start with that start's sensor noise."""

    def run(nets, starts, noise):
        one = lambda net: jax.vmap(lambda s0, n: rollout(params, net, activations, n_ticks, s0, n, wing_every)[1])(
            starts, noise
        )
        return jax.vmap(one)(nets)

    return jax.jit(run)


def start_states(params: DrosophilaParams, n: int, seed: int = 0, scale: float = 1.0) -> DrosophilaState:
    """``n`` start states (leading axis ``n``) in the hover posture at the origin. Start 0 at rest; the
    others perturbed: velocity uniform ±0.05 m/s per axis, roll and pitch ±0.1 rad, angular velocity
    ±1 rad/s per axis, times ``scale``. The pattern is a placeholder: the rollout sets it from the network."""
    rng = np.random.default_rng(seed)
    base = initial_state(params, pattern.from_outputs(jnp.zeros(N_PATTERN)))
    vel = np.zeros((n, 3), np.float32)
    vel[1:] = rng.uniform(-0.05, 0.05, (n - 1, 3)) * scale
    omega = np.zeros((n, 3), np.float32)
    omega[1:] = rng.uniform(-1.0, 1.0, (n - 1, 3)) * scale
    tilt = np.zeros((n, 3), np.float32)
    tilt[1:, :2] = rng.uniform(-0.1, 0.1, (n - 1, 2)) * scale
    half = np.linalg.norm(tilt, axis=1, keepdims=True) / 2
    dq = np.concatenate([np.cos(half), np.sinc(half / np.pi) * tilt / 2], axis=1).astype(np.float32)
    quat = np.asarray(quat_mul(jnp.asarray(dq), jnp.asarray(pitch_quat(params.stroke_plane_angle))))
    tile = lambda a: np.broadcast_to(np.asarray(a), (n,) + np.shape(a)).copy()
    return DrosophilaState(
        pos=np.zeros((n, 3), np.float32),
        vel=vel,
        quat=quat,
        omega=omega,
        pattern=jax.tree_util.tree_map(tile, base.pattern),
        crashed=np.zeros(n, bool),
    )


def n_ticks_for(params: DrosophilaParams, seconds: float) -> int:
    """Number of samples of ``sample_dt`` in ``seconds`` (at least 1)."""
    return max(1, int(round(seconds / params.sample_dt)))


def simulate_population(
    params: DrosophilaParams,
    nets,
    activations: Sequence[str],
    seconds: float,
    starts: DrosophilaState | None = None,
    noise=None,
    wing_every: int = 0,
) -> Trajectory:
    """Simulate every network of the stacked tree ``nets`` for ``seconds``: arrays ``(P, T, ...)`` from
    start 0 without ``starts``, ``(P, S, T, ...)`` with ``starts`` (leading axis S, :func:`start_states`).
    ``noise (S, U, 12)``: sensor noise per start and network update (U ≥ :func:`n_updates_for`; default none)."""
    n_ticks = n_ticks_for(params, seconds)
    s0 = start_states(params, 1) if starts is None else starts
    if noise is None:
        noise = np.zeros((s0.pos.shape[0], n_updates_for(seconds), N_INPUTS), np.float32)
    nets = jax.tree_util.tree_map(jnp.asarray, nets)
    size = jax.tree_util.tree_leaves(nets)[0].shape[0]
    if size == 1:  # a batch of one compiles to scalar code that rounds differently (see animat.fly.rollout)
        nets = jax.tree_util.tree_map(lambda a: jnp.concatenate([a, a]), nets)
    fn = population_rollout(params, tuple(activations), n_ticks, wing_every)
    traj = fn(nets, jax.tree_util.tree_map(jnp.asarray, s0), jnp.asarray(noise))
    traj = Trajectory(*(np.asarray(x)[:size] for x in traj))
    return Trajectory(*(x[:, 0] for x in traj)) if starts is None else traj
