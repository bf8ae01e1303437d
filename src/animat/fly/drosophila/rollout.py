"""Closed-loop flight of the fruit fly: once per control tick (≈ one wingbeat) the network observes the
fly and sets the wingbeat pattern generator's parameters for the next tick.

A rollout is ``lax.scan`` over ticks with an inner ``lax.scan`` over physics steps; a population is the
same function under ``vmap``, one jitted call for every fly and start.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from animat.evolve.network import activate
from animat.fly.drosophila import pattern
from animat.fly.drosophila.model import N_PATTERN, DrosophilaParams
from animat.fly.drosophila.physics import (DrosophilaState, initial_state, pitch_quat, set_pattern,
                                           step_with_power, stroke_plane_quat, wing_angles)
from animat.rotations import euler_xyz, quat_mul

N_INPUTS = 12
N_OUTPUTS = N_PATTERN
VEL_SCALE = 0.1  # m/s per unit of network input
OMEGA_SCALE = 10.0  # rad/s per unit of network input


class Trajectory(NamedTuple):
    """Recorded after every control tick: pos (T, 3) m, quat (T, 4), crashed (T,), the wings' mean
    aerodynamic power over the tick power (T,) W, the pattern parameters the network set pattern
    (T, 11) (Hz, rad), and the wing angles wing (T, M, 2, 3) rad, body positions fine_pos (T, M, 3) m and
    orientations fine_quat (T, M, 4) every ``wing_every`` steps, at the start of each (M = 0 when not
    recorded)."""

    pos: jax.Array
    quat: jax.Array
    crashed: jax.Array
    power: jax.Array
    pattern: jax.Array
    wing: jax.Array
    fine_pos: jax.Array
    fine_quat: jax.Array


def observe(params: DrosophilaParams, state: DrosophilaState, start, vel, omega) -> jax.Array:
    """Network input ``(12,)``: position relative to ``start`` in body lengths, the stroke plane's
    orientation (ZYX Euler angles, rad; zero in the hover posture), and the velocity (world, per 0.1 m/s)
    and body angular velocity (per 10 rad/s) averaged over the last tick (``vel``, ``omega``: a wingbeat
    average, free of the within-beat oscillation)."""
    return jnp.concatenate([(state.pos - start) / params.body_length, euler_xyz(stroke_plane_quat(params, state.quat)),
                            vel / VEL_SCALE, omega / OMEGA_SCALE])


def rollout(params: DrosophilaParams, net, activations: Sequence[str], n_ticks: int, state0: DrosophilaState,
            noise=None, wing_every: int = 0):
    """Fly one network for ``n_ticks`` ticks from ``state0`` (its pattern is replaced by the network's
    first choice, so the fly starts beating as it means to go on); returns (final state, Trajectory).
    ``noise (n_ticks, 12)``: sensor noise added to each observation."""
    n_steps = params.steps_per_control
    if wing_every and n_steps % wing_every:
        raise ValueError(f"wing_every ({wing_every}) must divide the {n_steps} steps of a tick")
    if noise is None:
        noise = jnp.zeros((n_ticks, N_INPUTS), jnp.float32)

    def policy(state, vel, omega, obs_noise):
        obs = observe(params, state, state0.pos, vel, omega) + obs_noise
        return pattern.from_outputs(activate(net, obs[:, None], activations)[:, 0])

    def physics_step(carry, _):
        state, vel, omega, power = carry
        new, p = step_with_power(params, state)
        return (new, vel + new.vel, omega + new.omega, power + p), (wing_angles(params, state), state.pos, state.quat)

    def tick(carry, obs_noise):
        state, vel, omega = carry
        state = set_pattern(params, state, policy(state, vel, omega, obs_noise))
        zero = jnp.zeros(3, jnp.float32)
        (state, vel, omega, power), (wings, fine_pos, fine_quat) = jax.lax.scan(physics_step, (state, zero, zero, jnp.float32(0.0)), None, length=n_steps)
        keep = slice(None, None, wing_every) if wing_every else slice(0, 0)
        record = Trajectory(state.pos, state.quat, state.crashed, power / n_steps, state.pattern.p_to, wings[keep], fine_pos[keep],
                            fine_quat[keep])
        return (state, vel / n_steps, omega / n_steps), record

    first = policy(state0, state0.vel, state0.omega, noise[0])
    state0 = state0._replace(pattern=pattern.start(first)._replace(psi0=state0.pattern.psi0))
    (state, _, _), traj = jax.lax.scan(tick, (state0, state0.vel, state0.omega), noise)
    return state, traj


@functools.lru_cache(maxsize=32)
def population_rollout(params: DrosophilaParams, activations: tuple[str, ...], n_ticks: int, wing_every: int = 0):
    """Jitted ``(nets (P, ...) stacked tree, starts: DrosophilaState (S, ...), noise (S, T, 12)) ->
    Trajectory (P, S, T, ...)``: every network flies from every start with that start's sensor noise."""

    def run(nets, starts, noise):
        one = lambda net: jax.vmap(lambda s0, n: rollout(params, net, activations, n_ticks, s0, n, wing_every)[1])(starts, noise)
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
    return DrosophilaState(pos=np.zeros((n, 3), np.float32), vel=vel, quat=quat, omega=omega,
                           pattern=jax.tree_util.tree_map(tile, base.pattern), crashed=np.zeros(n, bool))


def n_ticks_for(params: DrosophilaParams, seconds: float) -> int:
    """Number of control ticks in ``seconds`` (at least 1)."""
    return max(1, int(round(seconds / params.control_dt)))


def simulate_population(params: DrosophilaParams, nets, activations: Sequence[str], seconds: float,
                        starts: DrosophilaState | None = None, noise=None, wing_every: int = 0) -> Trajectory:
    """Simulate every network of the stacked tree ``nets`` for ``seconds``: arrays ``(P, T, ...)`` from
    start 0 without ``starts``, ``(P, S, T, ...)`` with ``starts`` (leading axis S, :func:`start_states`).
    ``noise (S, T, 12)``: sensor noise per start (default none)."""
    n_ticks = n_ticks_for(params, seconds)
    s0 = start_states(params, 1) if starts is None else starts
    if noise is None:
        noise = np.zeros((s0.pos.shape[0], n_ticks, N_INPUTS), np.float32)
    nets = jax.tree_util.tree_map(jnp.asarray, nets)
    size = jax.tree_util.tree_leaves(nets)[0].shape[0]
    if size == 1:  # a batch of one compiles to scalar code that rounds differently (see animat.fly.rollout)
        nets = jax.tree_util.tree_map(lambda a: jnp.concatenate([a, a]), nets)
    fn = population_rollout(params, tuple(activations), n_ticks, wing_every)
    traj = fn(nets, jax.tree_util.tree_map(jnp.asarray, s0), jnp.asarray(noise))
    traj = Trajectory(*(np.asarray(x)[:size] for x in traj))
    return Trajectory(*(x[:, 0] for x in traj)) if starts is None else traj
