"""Closed-loop flight: the network observes the fly every control tick and sets new wing targets.

A rollout is ``lax.scan`` over control ticks with an inner ``lax.scan`` over physics steps, and a
population is the same function under ``vmap`` — one jitted call simulates every fly at once.
"""

from __future__ import annotations

import functools
from typing import NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from animat.evolve.network import activate
from animat.fly.model import FlyParams
from animat.fly.physics import FlyState, initial_state, step
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


def rollout(params: FlyParams, net, activations: Sequence[str], n_ticks: int, state0: FlyState):
    """Fly one network for ``n_ticks`` control ticks from ``state0``; returns (final state, Trajectory)."""

    def tick(state, _):
        obs = observe(params, state, state0.pos)
        target = wing_targets(params, activate(net, obs[:, None], activations)[:, 0])
        state, _ = jax.lax.scan(lambda s, _: (step(params, s, target), None), state, None, length=params.steps_per_control)
        return state, Trajectory(state.pos, state.quat, state.wing, state.crashed)

    return jax.lax.scan(tick, state0, None, length=n_ticks)


@functools.lru_cache(maxsize=32)
def population_rollout(params: FlyParams, activations: tuple[str, ...], n_ticks: int):
    """Jitted ``(nets (P, ...) stacked tree, start_pos (3,)) -> Trajectory`` with arrays ``(P, T, ...)``."""

    def run(nets, start_pos):
        return jax.vmap(lambda net: rollout(params, net, activations, n_ticks, initial_state(start_pos))[1])(nets)

    return jax.jit(run)


def n_ticks_for(params: FlyParams, seconds: float) -> int:
    """Number of control ticks in ``seconds`` (at least 1)."""
    return max(1, int(round(seconds / params.control_dt)))


def simulate_population(params: FlyParams, nets, activations: Sequence[str], seconds: float, start=(0.0, 0.0, 0.0)) -> Trajectory:
    """Simulate every network of the stacked tree ``nets`` for ``seconds``; NumPy arrays ``(P, T, ...)``."""
    fn = population_rollout(params, tuple(activations), n_ticks_for(params, seconds))
    traj = fn(jax.tree_util.tree_map(jnp.asarray, nets), jnp.asarray(start, jnp.float32))
    return Trajectory(*(np.asarray(x) for x in traj))
