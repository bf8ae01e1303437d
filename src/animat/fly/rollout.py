"""Closed-loop flight: the network observes the fly every control tick and sets new wing targets.

A rollout is ``lax.scan`` over control ticks with an inner ``lax.scan`` over physics steps, and a
population is the same function under ``vmap`` — one jitted call simulates every fly at once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from animat.evolve.network import activate
from animat.fly.model import FlyParams
from animat.fly.physics import FlyState, step
from animat.rotations import euler_xyz

VEL_SCALE = 10.0  # u/s and rad/s per unit of network input


class Trajectory(NamedTuple):
    """Recorded after every control tick: pos (T, 3) u, quat (T, 4), wing (T, 2, 3) rad, crashed (T,)."""

    pos: jax.Array
    quat: jax.Array
    wing: jax.Array
    crashed: jax.Array


def observe(params: FlyParams, state: FlyState, start) -> jax.Array:
    """Network input ``(n_inputs,)``: position relative to the start in body lengths, orientation
    (ZYX Euler angles, rad), velocity and body angular velocity (per 10 u/s, per 10 rad/s), and the
    wing angles as fractions of their limits (right wing; both wings when asymmetric)."""
    lim = np.maximum(np.asarray(params.angle_limits, np.float32), 1e-6)
    wings = state.wing / lim
    wing_obs = wings.reshape(-1) if params.asymmetric else wings[0]
    return jnp.concatenate(
        [
            (state.pos - start) / params.body_length,
            euler_xyz(state.quat),
            state.vel / VEL_SCALE,
            state.omega / VEL_SCALE,
            wing_obs,
        ]
    )


def wing_targets(params: FlyParams, out) -> jax.Array:
    """Network output ``(n_outputs,)`` in [−1, 1] (clipped) -> wing targets ``(2, 3)`` rad.
    Symmetric flies: the left wing mirrors the right (same angles, mirrored geometry)."""
    lim = jnp.asarray(params.angle_limits, jnp.float32)
    t = jnp.clip(out, -1.0, 1.0).reshape(-1, 3) * lim
    return t if params.asymmetric else jnp.concatenate([t, t], axis=0)


def control_tick(params: FlyParams, net, activations: Sequence[str], state: FlyState, obs) -> FlyState:
    """One control tick: the network reads ``obs (n_in,)``, sets wing targets, and the physics steps
    ``params.steps_per_control`` times towards them."""
    return action_tick(params, state, activate(net, obs[:, None], activations)[:, 0])


def action_tick(params: FlyParams, state: FlyState, action) -> FlyState:
    """One control tick of network output ``action (n_outputs,)`` (whoever computed it): the physics steps
    ``params.steps_per_control`` times towards its wing targets (:func:`wing_targets`)."""
    return physics_tick(params, state, wing_targets(params, action))


def physics_tick(params: FlyParams, state: FlyState, target) -> FlyState:
    """``params.steps_per_control`` physics steps towards wing targets ``target (2, 3)`` rad."""
    return jax.lax.scan(lambda s, _: (step(params, s, target), None), state, None, length=params.steps_per_control)[0]


def rollout(params: FlyParams, net, activations: Sequence[str], n_ticks: int, state0: FlyState, noise=None):
    """Fly one network for ``n_ticks`` control ticks from ``state0``; returns (final state, Trajectory).
    ``noise (n_ticks, n_inputs)``, if given, is added to the observation at each tick (sensor noise)."""

    def tick(state, obs_noise):
        state = control_tick(params, net, activations, state, observe(params, state, state0.pos) + obs_noise)
        return state, Trajectory(state.pos, state.quat, state.wing, state.crashed)

    if noise is None:
        noise = jnp.zeros((n_ticks, params.n_inputs), jnp.float32)
    return jax.lax.scan(tick, state0, noise)


@functools.lru_cache(maxsize=32)
def population_rollout(params: FlyParams, activations: tuple[str, ...], n_ticks: int):
    """Jitted ``(nets (P, ...) stacked tree, starts: FlyState (S, ...), noise (S, T, n_inputs)) ->
    Trajectory (P, S, T, ...)``: every network flies from every start with that start's sensor noise."""

    def run(nets, starts, noise):
        per_net = lambda net: jax.vmap(lambda s0, n: rollout(params, net, activations, n_ticks, s0, n)[1])(
            starts, noise
        )
        return jax.vmap(per_net)(nets)

    return jax.jit(run)


def start_states(params: FlyParams, n: int, seed: int = 0, scale: float = 1.0) -> FlyState:
    """``n`` start states (leading axis ``n``). Start 0: at rest, level, wings at zero, at the origin.
    The others are perturbed within the left–right symmetry plane (a symmetric fly has no roll or yaw
    torque to correct anything else): velocity y, z uniform ±0.5 u/s, pitch ±0.15 rad, pitch rate
    ±0.5 rad/s, wing angles uniform within ±50% of their limits (both wings alike), times ``scale``."""
    rng = np.random.default_rng(seed)
    m = n - 1
    vel = np.zeros((n, 3), np.float32)
    vel[1:, 1:] = rng.uniform(-0.5, 0.5, (m, 2)) * scale
    pitch = np.concatenate([[0.0], rng.uniform(-0.15, 0.15, m) * scale])
    quat = np.stack([np.cos(pitch / 2), np.sin(pitch / 2), 0 * pitch, 0 * pitch], axis=1).astype(np.float32)
    omega = np.zeros((n, 3), np.float32)
    omega[1:, 0] = rng.uniform(-0.5, 0.5, m) * scale
    wing = np.zeros((n, 2, 3), np.float32)
    wing[1:] = rng.uniform(-0.5, 0.5, (m, 1, 3)) * min(scale, 2.0) * np.asarray(params.angle_limits)
    return FlyState(
        pos=np.zeros((n, 3), np.float32), vel=vel, quat=quat, omega=omega, wing=wing, crashed=np.zeros(n, bool)
    )


def n_ticks_for(params: FlyParams, seconds: float) -> int:
    """Number of control ticks in ``seconds`` (at least 1)."""
    return max(1, int(round(seconds / params.control_dt)))


def sensor_noise(params: FlyParams, n_starts: int, n_ticks: int, std: float, seed: int = 0) -> np.ndarray:
    """Gaussian sensor noise ``(n_starts, n_ticks, n_inputs)`` in network-input units; none for start 0."""
    noise = np.random.default_rng(seed + 1).normal(0.0, std, (n_starts, n_ticks, params.n_inputs)).astype(np.float32)
    noise[0] = 0.0
    return noise


def simulate_population(
    params: FlyParams, nets, activations: Sequence[str], seconds: float, starts: FlyState | None = None, noise=None
) -> Trajectory:
    """Simulate every network of the stacked tree ``nets`` for ``seconds``.

    Without ``starts``: from rest at the origin, arrays ``(P, T, ...)``; with ``starts`` (a FlyState
    with a leading axis ``S``, see :func:`start_states`): arrays ``(P, S, T, ...)``. ``noise``
    ``(S, T, n_inputs)``: sensor noise per start (default none).
    """
    n_ticks = n_ticks_for(params, seconds)
    fn = population_rollout(params, tuple(activations), n_ticks)
    s0 = start_states(params, 1) if starts is None else starts
    if noise is None:
        noise = np.zeros((s0.pos.shape[0], n_ticks, params.n_inputs), np.float32)
    nets = jax.tree_util.tree_map(jnp.asarray, nets)
    size = jax.tree_util.tree_leaves(nets)[0].shape[0]
    if size == 1:
        # XLA compiles a batch of one to scalar code that rounds differently from the vectorised code
        # of any larger batch; flights are chaotic, so one fly is flown as two to reproduce training
        # (and every other batch size) bit for bit.
        nets = jax.tree_util.tree_map(lambda a: jnp.concatenate([a, a]), nets)
    traj = fn(nets, jax.tree_util.tree_map(jnp.asarray, s0), jnp.asarray(noise))
    traj = Trajectory(*(np.asarray(x)[:size] for x in traj))
    return Trajectory(*(x[:, 0] for x in traj)) if starts is None else traj
