"""Fitness functions of the fly (maximised) and the batched fitness object the engine calls.

Each takes ``pos (..., T, 3)`` and ``quat (..., T, 4)`` recorded every control tick and returns ``(...)``.
All heights are in simulation units relative to the start (z up). A crashed fly gets NaN, which the
engine ranks worst and counts as a crash.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animat.config import require
from animat.fly.model import FlyParams
from animat.fly.rollout import Trajectory, n_ticks_for, sensor_noise, simulate_population, start_states
from animat.fly.steer.score import WINDOW_S

TASKS = (
    "hover",
    "forward",
    "back",
    "left",
    "right",
    "up",
    "down",
    "goal",
)  # --task: the steering networks' (see tracking)


def mean_height(pos: np.ndarray, quat: np.ndarray | None = None) -> np.ndarray:
    """Mean height over the episode. ``pos (..., T, 3)`` -> ``(...)``."""
    return pos[..., :, 2].mean(axis=-1)


def final_height(pos: np.ndarray, quat: np.ndarray | None = None) -> np.ndarray:
    """Height at the end of the episode."""
    return pos[..., -1, 2]


def lateral(pos: np.ndarray, quat: np.ndarray | None = None) -> np.ndarray:
    """Final height − (mean |x| + mean |y|) / 5: climb while staying over the start point."""
    drift = np.abs(pos[..., :, 0]).mean(axis=-1) + np.abs(pos[..., :, 1]).mean(axis=-1)
    return pos[..., -1, 2] - drift / 5.0


def hover(pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """Hold altitude, upright, over the start point (start at the origin):
    −(mean |Δz| + (mean |x| + mean |y|) / 5 + 4 · mean (1 − cos tilt)), tilt = angle of the body's z axis
    from vertical (the last term is up to 8 u when upside down).

    Not one of the paper's three; the default job uses it because a fly that keeps its height and
    attitude stays in the states it was trained on, so it keeps flying well past the training episode."""
    drift = np.abs(pos[..., :, 0]).mean(axis=-1) + np.abs(pos[..., :, 1]).mean(axis=-1)
    x, y = quat[..., 1], quat[..., 2]
    cos_tilt = 1.0 - 2.0 * (x * x + y * y)  # R[2, 2]
    return -(np.abs(pos[..., :, 2]).mean(axis=-1) + drift / 5.0 + 4.0 * (1.0 - cos_tilt).mean(axis=-1))


def tracking(
    error: np.ndarray, cmd_vel: np.ndarray, quat: np.ndarray, body_length: float, across: float = 2.0, tilt: float = 4.0
) -> np.ndarray:
    """Keep on the command's moving reference point (:mod:`animat.fly.steer.tracking`), upright:
    −mean over ticks of ``(|e·d| + across · |e − (e·d) d|) / body_length + tilt · (1 − cos tilt angle)``,
    with ``e (..., T, 3)`` u the position minus the reference point and ``d`` the unit direction of the
    command velocity ``cmd_vel (..., T, 3)`` u/s (zero for hover: the whole error costs ``across``).

    So a fly moving exactly at the commanded velocity from where the command began scores 0, the best; one
    that moves across the direction at ``u`` u/s loses ``across · u · mean(t) / body_length``, one that
    lags or leads along it ``u · mean(t) / body_length``. ``quat (..., T, 4)`` as in the other fitnesses."""
    speed = np.linalg.norm(cmd_vel, axis=-1, keepdims=True)
    d = np.where(speed > 0, cmd_vel / np.where(speed > 0, speed, 1.0), 0.0)
    along = (error * d).sum(axis=-1)
    off = np.linalg.norm(error - along[..., None] * d, axis=-1)
    x, y = quat[..., 1], quat[..., 2]
    cos_tilt = 1.0 - 2.0 * (x * x + y * y)
    return -((np.abs(along) + across * off) / body_length + tilt * (1.0 - cos_tilt)).mean(axis=-1)


def window_velocity_error(
    velocity: np.ndarray, cmd_vel: np.ndarray, ticks_per_window: int, speed: float, power: float = 1.0
) -> np.ndarray:
    """How far the fly's velocity is from the command's, as issue 21's steering score reads it
    (:mod:`animat.fly.steer.score`: the mean velocity of each 0.5 s window after a 0.5 s hand-over):
    the mean over whole windows of ``ticks_per_window`` ticks, the first left out, of
    ``|mean over the window of (v - c)| / speed``. ``velocity`` and ``cmd_vel (..., T, 3)`` u/s in the
    command frame (:class:`animat.fly.steer.tracking.Track`), ``speed`` u/s > 0 -> ``(...)``; 0 when every
    window moves at the commanded velocity, 1 for a fly at rest under a direction command. ``power`` p ≥ 1: the
    windows' power mean (mean of e^p)^(1/p) instead of their mean (p = 1): the larger p, the more the worst
    windows count, towards the score's "≥ 80 % of the windows", which for a 2-3 s segment (3-5 windows) asks
    every window, the first after the hand-over included."""
    T = velocity.shape[-2]
    windows = T // ticks_per_window
    if windows < 2:
        raise ValueError(f"a window-velocity error needs at least 2 windows of {ticks_per_window} ticks, got {T} ticks")
    diff = (velocity - cmd_vel)[..., ticks_per_window : windows * ticks_per_window, :]
    means = diff.reshape(*diff.shape[:-2], windows - 1, ticks_per_window, 3).mean(axis=-2)
    errors = np.linalg.norm(means, axis=-1) / speed
    return errors.mean(axis=-1) if power == 1 else (errors**power).mean(axis=-1) ** (1.0 / power)


def window_cone_error(
    velocity: np.ndarray, cmd_vel: np.ndarray, ticks_per_window: int, speed: float, max_angle_deg: float = 20.0
) -> np.ndarray:
    """How far the windows are outside the score's cone (:mod:`animat.fly.steer.score`: a window is on course
    when its mean velocity is within 30° of the commanded direction): per 0.5 s window after the first (the
    hand-over), with ``m`` its mean velocity and ``d`` the unit direction of its mean command velocity,
    ``max(0, |m − (m·d) d| − tan(max_angle_deg) · (m·d)) / speed``, the mean over the windows -> ``(...)``.
    ``velocity`` and ``cmd_vel (..., T, 3)`` u/s, ``speed`` u/s > 0. 0 for every window inside the cone,
    however slow (the score asks only the segment's mean speed along the direction to reach half the target);
    a window at 90° at ``speed`` costs 1, one moving backwards more; windows under a hover command (``d`` = 0)
    cost 0. Unlike :func:`window_velocity_error`, which costs a window 35° off at full speed (0.60) less than
    one on course at rest (1), this ranks a slow turn onto the course above a fast one past it."""
    T = velocity.shape[-2]
    windows = T // ticks_per_window
    if windows < 2:
        raise ValueError(f"a window cone error needs at least 2 windows of {ticks_per_window} ticks, got {T} ticks")
    shape = (windows - 1, ticks_per_window, 3)
    m = (
        velocity[..., ticks_per_window : windows * ticks_per_window, :]
        .reshape(*velocity.shape[:-2], *shape)
        .mean(axis=-2)
    )
    c = (
        np.broadcast_to(cmd_vel, velocity.shape)[..., ticks_per_window : windows * ticks_per_window, :]
        .reshape(*velocity.shape[:-2], *shape)
        .mean(axis=-2)
    )
    norm = np.linalg.norm(c, axis=-1, keepdims=True)
    d = np.where(norm > 0, c / np.where(norm > 0, norm, 1.0), 0.0)
    return np.where(norm[..., 0] > 0, outside_cone(m, d, max_angle_deg), 0.0).mean(axis=-1) / speed


def outside_cone(velocity: np.ndarray, d: np.ndarray, max_angle_deg: float) -> np.ndarray:
    """How far (u/s) each velocity ``(..., 3)`` lies outside the cone of half-angle ``max_angle_deg`` about the unit
    direction ``d`` (broadcast): ``max(0, |v − (v·d) d| − tan(angle) · (v·d))`` -> ``(...)``; 0 inside, at rest
    included."""
    along = (velocity * d).sum(axis=-1)
    cross = np.linalg.norm(velocity - along[..., None] * d, axis=-1)
    return np.maximum(0.0, cross - np.tan(np.radians(max_angle_deg)) * along)


FITNESS = {"mean-height": mean_height, "final-height": final_height, "lateral": lateral, "hover": hover}


def fitness_function(name: str):
    return FITNESS[require("fitness", name, choices=sorted(FITNESS))]


def score(traj: Trajectory, name: str) -> np.ndarray:
    """Fitness per fly from a trajectory with arrays ``(P, [S,] T, ...)``: the mean over the ``S`` starts;
    NaN where the fly crashed (from any start)."""
    return over_starts(fitness_function(name)(traj.pos, traj.quat).astype(np.float64), traj.crashed)


def over_starts(values: np.ndarray, crashed: np.ndarray) -> np.ndarray:
    """Fitness ``(P,)`` from per-start ``values (P, [S])`` and crash flags ``(P, [S,] T)``: the mean over
    the starts; NaN where the fly crashed from any start (a crash is never averaged away)."""
    crashed = crashed[..., -1]
    if values.ndim == 2:
        values, crashed = values.mean(axis=1), crashed.any(axis=1)
    return np.where(crashed, np.nan, values)


@dataclass(frozen=True)
class FlyFitness:
    """Batched fitness for the engine: stacked network tree -> fitness ``(P,)``. Picklable (for Ray):
    the jitted rollout is rebuilt (and cached) in whichever process calls it."""

    params: FlyParams
    seconds: float
    name: str
    activations: tuple[str, ...]
    starts: int = 1  # each fly flies from this many start states (start 0 at rest; see start_states)
    seed: int = 0  # seeds the perturbed starts and noise (fixed for a run, so fitness stays deterministic)
    noise: float = 0.0  # sensor-noise std (network-input units) on every start but the first

    def __post_init__(self):
        fitness_function(self.name)
        require("episode length (s)", self.seconds, gt=0)
        require("starts", self.starts, ge=1)

    def __call__(self, nets) -> np.ndarray:
        if self.starts == 1 and self.noise == 0:
            return score(simulate_population(self.params, nets, self.activations, self.seconds), self.name)
        starts = start_states(self.params, self.starts, self.seed)
        noise = sensor_noise(self.params, self.starts, n_ticks_for(self.params, self.seconds), self.noise, self.seed)
        return score(simulate_population(self.params, nets, self.activations, self.seconds, starts, noise), self.name)


@dataclass(frozen=True)
class TrackFitness:
    """Batched fitness of a steering task (``task`` in :data:`TASKS`): ``position_weight`` × :func:`tracking`
    − ``velocity_weight`` × :func:`window_velocity_error` (0.5 s windows; their power mean of ``window_power``)
    − ``cone_weight`` × :func:`window_cone_error` (cone of ``cone_angle_deg``). Every network flies
    from ``starts`` start states (:func:`animat.fly.steer.tracking.varied_starts` with ``start_speed`` u/s,
    ``start_angle`` rad, ``start_spin`` rad/s; or with ``start_pool``, a recorded pool's states,
    :func:`animat.fly.steer.tracking.pool_starts`, checked against its ``start_pool_sha256``) through the task's
    commands at
    ``speed`` u/s (:func:`animat.fly.steer.tracking.command_schedule`; ``goal``: random commands lasting ``segment``
    s each);
    the mean over the starts, NaN where the fly crashed. Picklable, deterministic for a run."""

    params: FlyParams
    seconds: float
    task: str
    activations: tuple[str, ...]
    starts: int = 1
    seed: int = 0
    speed: float = 2.0
    start_speed: float = 0.0
    start_angle: float = 0.0
    start_spin: float = 0.0
    segment: tuple[float, float] = (1.0, 3.0)
    position_weight: float = 1.0  # of tracking (position and tilt)
    velocity_weight: float = 0.0  # of window_velocity_error (0.5 s windows)
    start_pool: str | None = None  # path of a start pool's .npz
    start_pool_sha256: str | None = None
    window_power: float = 1.0  # window_velocity_error's power mean over the windows
    cone_weight: float = 0.0  # of window_cone_error
    cone_angle_deg: float = 20.0  # window_cone_error's cone half-angle (the score's is 30°)

    def __post_init__(self):
        require("task", self.task, choices=TASKS)
        require("episode length (s)", self.seconds, gt=0)
        require("starts", self.starts, ge=1)

    def schedule(self):
        """``(starts, switch, cmd_vel, names)`` the networks fly (see :mod:`animat.fly.steer.tracking`)."""
        from animat.fly.steer.tracking import command_schedule, pool_starts, read_start_pool, varied_starts

        if self.start_pool is not None:
            s0 = pool_starts(
                self.params, self.starts, self.seed, read_start_pool(self.start_pool, self.start_pool_sha256)
            )
        else:
            s0 = varied_starts(self.params, self.starts, self.seed, self.start_speed, self.start_angle, self.start_spin)
        switch, cmd_vel, names = command_schedule(
            self.task,
            self.starts,
            n_ticks_for(self.params, self.seconds),
            self.params.control_dt,
            self.speed,
            self.seed,
            tuple(self.segment),
        )
        return s0, switch, cmd_vel, names

    def __call__(self, nets) -> np.ndarray:
        import jax
        import jax.numpy as jnp

        from animat.fly.steer.tracking import population_commands

        s0, switch, cmd_vel, _ = self.schedule()
        fn = population_commands(self.params, tuple(self.activations), self.task == "goal")
        track = fn(
            jax.tree_util.tree_map(jnp.asarray, nets),
            jax.tree_util.tree_map(jnp.asarray, s0),
            jnp.asarray(switch),
            jnp.asarray(cmd_vel),
        )
        values = self.position_weight * tracking(
            np.asarray(track.error, np.float64),
            cmd_vel[None],
            np.asarray(track.quat, np.float64),
            self.params.body_length,
        )
        if self.velocity_weight:
            window = int(round(WINDOW_S / self.params.control_dt))
            values = values - self.velocity_weight * window_velocity_error(
                np.asarray(track.velocity, np.float64), cmd_vel[None], window, self.speed, self.window_power
            )
        if self.cone_weight:
            window = int(round(WINDOW_S / self.params.control_dt))
            values = values - self.cone_weight * window_cone_error(
                np.asarray(track.velocity, np.float64), cmd_vel[None], window, self.speed, self.cone_angle_deg
            )
        return over_starts(values, np.asarray(track.crashed))
