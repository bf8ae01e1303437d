"""Flying to a command: the command frame, the reference point, the steering networks' observation and
their flight (training rollouts and the :class:`animat.fly.steer.pilot.Pilot` step the same functions).

When a command starts (at a *switch*) the fly's position becomes the frame's origin and its heading
(:func:`animat.fly.steer.commands.heading`) the frame's yaw: the **command frame** is the world translated to
that point and turned so that the fly's heading is +y. A command is a velocity in that frame
(``forward`` = +y, ``left`` = −x, ``up`` = +z, times the target speed; ``hover`` = 0), and the
**reference point** moves from the origin at that velocity: ``ref(k) = v · k · control_dt`` after ``k``
ticks. Every steering task is "keep on the moving point": a direction network tracks a point that
moves at the target speed, a hover network one that stands still, so a task generalises over any
duration, and because the physics is the same under any turn about +z, a network trained from one
heading flies from every heading.

The network observes what :func:`animat.fly.rollout.observe` gives a hovering fly, in the command
frame: position relative to the reference point (body lengths), orientation (ZYX Euler angles of the
attitude turned by −yaw), velocity (turned) and body angular velocity per 10 u/s, wing angles; the goal
network also gets the command, :func:`command_input`: its command-frame velocity per 10 u/s (3 more inputs). For a fly
at rest at the origin with heading 0 and the hover command this is exactly ``observe``'s input: from
rest, :func:`command_rollout` flies a hover network bit for bit as :func:`animat.fly.replay.fly_genome` does.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from animat import runs
from animat.errors import ConfigError
from animat.evolve.network import activate
from animat.fly.model import FlyParams
from animat.fly.physics import FlyState
from animat.fly.rollout import action_tick, observe
from animat.fly.steer.commands import COMMAND_SCALE, COMMANDS, direction, heading
from animat.rotations import quat_mul


class Frame(NamedTuple):
    """The command frame: ``origin (3,)`` u (world), ``yaw ()`` rad (the heading at the switch), ``ticks ()``
    int32: control ticks since the switch."""

    origin: jax.Array
    yaw: jax.Array
    ticks: jax.Array


def new_frame(state: FlyState) -> Frame:
    """The frame of a command starting now: at the fly's position, turned to its heading."""
    return Frame(state.pos, heading(state.quat, jnp), jnp.zeros((), jnp.int32))


def command_velocity(name: str, speed: float) -> np.ndarray:
    """Velocity ``(3,)`` u/s of command ``name`` in the command frame (heading 0) at ``speed`` u/s."""
    return (direction(name, 0.0) * speed).astype(np.float32)


def command_input(cmd_vel) -> jax.Array:
    """The goal network's extra inputs ``(3,)``: the command-frame velocity ``cmd_vel (3,)`` u/s per
    :data:`animat.fly.steer.commands.COMMAND_SCALE` u/s (``left`` at 2 u/s: ``(-0.2, 0, 0)``)."""
    return cmd_vel / COMMAND_SCALE


def turn(yaw, v):
    """World vectors ``v (..., 3)`` in a frame turned by ``yaw`` rad about +z (i.e. rotated by −yaw)."""
    c, s = jnp.cos(yaw), jnp.sin(yaw)
    return jnp.stack([c * v[..., 0] + s * v[..., 1], c * v[..., 1] - s * v[..., 0], v[..., 2]], axis=-1)


def in_frame(state: FlyState, frame: Frame) -> FlyState:
    """``state`` seen in the command frame: position from its origin, velocity and attitude turned by −yaw."""
    half = -0.5 * frame.yaw
    qz = jnp.stack([jnp.cos(half), 0 * half, 0 * half, jnp.sin(half)])
    return state._replace(
        pos=turn(frame.yaw, state.pos - frame.origin), vel=turn(frame.yaw, state.vel), quat=quat_mul(qz, state.quat)
    )


def reference(params: FlyParams, frame: Frame, cmd_vel) -> jax.Array:
    """The reference point ``(3,)`` u in the command frame after ``frame.ticks`` ticks at ``cmd_vel`` u/s."""
    return cmd_vel * (frame.ticks.astype(jnp.float32) * jnp.float32(params.control_dt))


def command_observation(params: FlyParams, state: FlyState, frame: Frame, cmd_vel, goal: bool) -> jax.Array:
    """The steering network's input: ``n_inputs`` (+3 with ``goal``), see the module docstring."""
    obs = observe(params, in_frame(state, frame), reference(params, frame, cmd_vel))
    return jnp.concatenate([obs, command_input(cmd_vel)]) if goal else obs


def steering_tick(params: FlyParams, state: FlyState, frame: Frame, action) -> tuple[FlyState, Frame]:
    """The one control tick under a command, whoever computed ``action (n_outputs,)`` from the command observation
    (:func:`command_observation`): a steering network (:func:`command_tick`: the fitness rollouts, the lookahead and
    the :class:`~animat.fly.steer.pilot.Pilot`), the teacher or the learner of a distillation
    (:func:`animat.fly.steer.distill.dagger_rollouts`) or a Gymnasium agent (:mod:`animat.fly.env`). Returns
    ``(state, frame)`` after it: the physics stepped towards the action's wing targets
    (:func:`animat.fly.rollout.action_tick`), the frame one tick older (its reference point moved on)."""
    return action_tick(params, state, action), frame._replace(ticks=frame.ticks + 1)


def command_tick(
    params: FlyParams, net, activations: Sequence[str], state: FlyState, frame: Frame, cmd_vel, goal: bool
) -> tuple[FlyState, Frame]:
    """One control tick of network ``net`` under a command: it reads :func:`command_observation` (with the command's
    inputs if ``goal``), then :func:`steering_tick`."""
    obs = command_observation(params, state, frame, cmd_vel, goal)
    return steering_tick(params, state, frame, activate(net, obs[:, None], activations)[:, 0])


def switch_frame(starts, state: FlyState, frame: Frame) -> Frame:
    """A new command frame at ``state`` (:func:`new_frame`) where ``starts`` (bool, traced) says a command starts at
    this tick, else ``frame``."""
    return jax.tree_util.tree_map(lambda n, o: jnp.where(starts, n, o), new_frame(state), frame)


class Track(NamedTuple):
    """Recorded after every tick: ``error (T, 3)`` u, the fly's position minus the reference point in the
    command frame; ``quat (T, 4)``; ``crashed (T,)``; ``velocity (T, 3)`` u/s in the command frame."""

    error: jax.Array
    quat: jax.Array
    crashed: jax.Array
    velocity: jax.Array


def tracking_error(params: FlyParams, state: FlyState, frame: Frame, cmd_vel) -> jax.Array:
    """Position minus reference point ``(3,)`` u, in the command frame."""
    return turn(frame.yaw, state.pos - frame.origin) - reference(params, frame, cmd_vel)


def command_rollout(
    params: FlyParams, net, activations: Sequence[str], state0: FlyState, switch, cmd_vel, goal: bool
) -> Track:
    """Fly one network from ``state0`` through a command schedule: ``switch (T,)`` bool (a command starts
    at this tick: a new frame; tick 0 always starts one) and ``cmd_vel (T, 3)`` u/s in the command frame."""

    def tick(carry, inputs):
        state, frame = carry
        starts, vel = inputs
        state, frame = command_tick(params, net, activations, state, switch_frame(starts, state, frame), vel, goal)
        return (state, frame), Track(
            tracking_error(params, state, frame, vel), state.quat, state.crashed, turn(frame.yaw, state.vel)
        )

    switch = jnp.asarray(switch).at[0].set(True)
    return jax.lax.scan(tick, (state0, new_frame(state0)), (switch, jnp.asarray(cmd_vel, jnp.float32)))[1]


@functools.lru_cache(maxsize=32)
def population_commands(params: FlyParams, activations: tuple[str, ...], goal: bool):
    """Jitted ``(nets (P, ...), starts (S, ...), switch (S, T), cmd_vel (S, T, 3)) -> Track (P, S, T, ...)``."""

    def run(nets, starts, switch, cmd_vel):
        per_net = lambda net: jax.vmap(lambda s0, sw, v: command_rollout(params, net, activations, s0, sw, v, goal))(
            starts, switch, cmd_vel
        )
        return jax.vmap(per_net)(nets)

    return jax.jit(run)


def varied_starts(params: FlyParams, n: int, seed: int, speed: float, angle: float, spin: float) -> FlyState:
    """``n`` start states (leading axis ``n``). Start 0: at rest, level, wings at zero, at the origin.
    The others: each velocity component uniform ±``speed`` u/s, roll and pitch uniform ±``angle`` rad, any
    heading, each angular-velocity component uniform ±``spin`` rad/s, each wing angle uniform within ±50 %
    of its limit (the two wings independently)."""
    rng = np.random.default_rng(seed)
    m = n - 1
    vel = np.zeros((n, 3), np.float32)
    vel[1:] = rng.uniform(-speed, speed, (m, 3))
    roll, pitch = (np.concatenate([[0.0], rng.uniform(-angle, angle, m)]) for _ in range(2))
    yaw = np.concatenate([[0.0], rng.uniform(-np.pi, np.pi, m)])
    cr, sr, cp, sp, cy, sy = (
        np.cos(roll / 2),
        np.sin(roll / 2),
        np.cos(pitch / 2),
        np.sin(pitch / 2),
        np.cos(yaw / 2),
        np.sin(yaw / 2),
    )
    quat = np.stack(
        [
            cr * cp * cy + sr * sp * sy,
            sr * cp * cy - cr * sp * sy,
            cr * sp * cy + sr * cp * sy,
            cr * cp * sy - sr * sp * cy,
        ],
        1,
    )
    omega = np.zeros((n, 3), np.float32)
    omega[1:] = rng.uniform(-spin, spin, (m, 3))
    wing = np.zeros((n, 2, 3), np.float32)
    wing[1:] = rng.uniform(-0.5, 0.5, (m, 2, 3)) * np.asarray(params.angle_limits)
    return FlyState(
        pos=np.zeros((n, 3), np.float32),
        vel=vel,
        quat=quat.astype(np.float32),
        omega=omega,
        wing=wing,
        crashed=np.zeros(n, bool),
    )


POOL_SHAPES = {"vel": (3,), "quat": (4,), "omega": (3,), "wing": (2, 3)}  # a start pool's arrays, each (N, *shape)


def read_start_pool(path, sha256: str | None = None) -> dict[str, np.ndarray]:
    """A start pool: recorded fly states (:func:`animat.fly.steer.pilot.handover_states`), the ``.npz`` arrays
    ``vel (N, 3)`` u/s, ``quat (N, 4)``, ``omega (N, 3)`` rad/s, ``wing (N, 2, 3)`` rad, float32, never unpickled.
    ``sha256``: the file's digest when the pool was first used (a run's config.json); a pool that changed
    since, a missing array, a wrong shape or a non-finite value is a one-line ConfigError."""

    data = Path(path).read_bytes() if Path(path).is_file() else None
    if data is None:
        raise ConfigError(f"start pool {str(path)!r} does not exist")
    if sha256 is not None and runs.sha256_hex(data) != sha256:
        raise ConfigError(
            f"start pool {str(path)!r} changed since this run began (its sha256 differs from config.json's)"
        )
    arrays = runs.read_npz(path, data=data, keys=POOL_SHAPES, what="start pool", error=ConfigError)
    n = len(arrays["vel"])
    for key, shape in POOL_SHAPES.items():
        a = arrays[key]
        if a.shape != (n, *shape) or n == 0 or not np.isfinite(a).all():
            raise ConfigError(
                f"start pool {str(path)!r}: {key} must be ({n or 'N ≥ 1'}, {', '.join(map(str, shape))}) finite "
                f"values, got {a.shape}"
            )
    return {k: arrays[k].astype(np.float32) for k in POOL_SHAPES}


def pool_starts(params: FlyParams, n: int, seed: int, pool: dict[str, np.ndarray]) -> FlyState:
    """``n`` start states (leading axis ``n``): start 0 at rest, level, wings at zero (as in :func:`varied_starts`),
    the others states of ``pool`` (:func:`read_start_pool`) drawn by ``seed`` (without repeats while the
    pool has enough), each moved to the origin."""
    rest = varied_starts(params, 1, seed, 0.0, 0.0, 0.0)
    size = len(pool["vel"])
    idx = np.random.default_rng(seed).choice(size, n - 1, replace=size < n - 1)
    pick = {k: np.concatenate([getattr(rest, k), pool[k][idx]]).astype(np.float32) for k in POOL_SHAPES}
    return FlyState(pos=np.zeros((n, 3), np.float32), crashed=np.zeros(n, bool), **pick)


def command_schedule(
    task: str,
    n_starts: int,
    n_ticks: int,
    control_dt: float,
    speed: float,
    seed: int,
    segment: tuple[float, float] = (1.0, 3.0),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Commands per start and tick: ``(switch (S, T) bool, cmd_vel (S, T, 3) u/s, names (S, T) str)``.
    A task named after a command: that command throughout. ``goal``: commands drawn at random (uniformly
    from :data:`COMMANDS`), each for a duration uniform in ``segment`` s; start 0 begins with ``hover``."""
    switch = np.zeros((n_starts, n_ticks), bool)
    switch[:, 0] = True
    names = np.full((n_starts, n_ticks), task if task in COMMANDS else "hover", dtype=object)
    if task == "goal":
        rng = np.random.default_rng(seed + 2)
        for s in range(n_starts):
            k = 0
            while k < n_ticks:
                name = "hover" if (s == 0 and k == 0) else COMMANDS[rng.integers(len(COMMANDS))]
                length = max(1, int(round(rng.uniform(*segment) / control_dt)))
                names[s, k : k + length], switch[s, k] = name, True
                k += length
    velocity = {name: command_velocity(name, speed) for name in COMMANDS}
    cmd_vel = np.stack([np.stack([velocity[nm] for nm in row]) for row in names]).astype(np.float32)
    return switch, cmd_vel, names.astype(str)
