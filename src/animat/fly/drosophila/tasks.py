"""Fitness of the fruit fly (maximised) and the batched fitness object the engine calls.

A crashed fly (runaway or non-finite state, from any start) gets NaN, which the engine ranks worst.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animat.errors import ConfigError
from animat.fly.drosophila.model import DrosophilaParams
from animat.fly.drosophila.power import mechanical_power_per_kg
from animat.fly.drosophila.rollout import (
    N_INPUTS,
    DrosophilaState,
    Trajectory,
    n_updates_for,
    pool_start_states,
    simulate_population,
    start_states,
)
from animat.fly.tasks import over_starts, tracking, window_velocity_error

# a direction task's unit vector in the frame of the start's heading (body x forward, y left, z up; the starts face +x)
DIRECTIONS = {
    "forward": (1.0, 0.0, 0.0),
    "back": (-1.0, 0.0, 0.0),
    "left": (0.0, 1.0, 0.0),
    "right": (0.0, -1.0, 0.0),
    "up": (0.0, 0.0, 1.0),
    "down": (0.0, 0.0, -1.0),
}
WINDOW_S = 0.5  # the steering score's velocity windows (animat.fly.steer.score), s


def stroke_plane_tilt_cos(params: DrosophilaParams, quat: np.ndarray) -> np.ndarray:
    """Cosine of the stroke-plane normal's angle from vertical, ``quat (..., 4)`` -> ``(...)``: 1 in the
    hover posture, −1 upside down."""
    b = params.stroke_plane_angle
    w, x, y, z = (quat[..., i] for i in range(4))
    # body-frame stroke-plane normal (sin b, 0, cos b), its world z component: R[2, 0] sin b + R[2, 2] cos b
    return 2.0 * (x * z - w * y) * np.sin(b) + (1.0 - 2.0 * (x * x + y * y)) * np.cos(b)


def hover(params: DrosophilaParams, pos: np.ndarray, quat: np.ndarray, peak_weight: float = 0.0) -> np.ndarray:
    """Hold the starting height, over the start point, stroke plane level (start at the origin):
    ``−(mean |Δz| + peak_weight max |Δz| + mean horizontal distance / 5) / body length − mean (1 − cos tilt)``.
    The peak term weighs a brief climb or dip (a take-off overshoot) that the mean hardly sees.
    ``pos (..., T, 3)`` m, ``quat (..., T, 4)`` -> ``(...)``."""
    dz = np.abs(pos[..., 2])
    height = dz.mean(axis=-1) + peak_weight * dz.max(axis=-1)
    drift = np.hypot(pos[..., 0], pos[..., 1]).mean(axis=-1)
    tilt = (1.0 - stroke_plane_tilt_cos(params, quat)).mean(axis=-1)
    return -(height + drift / 5.0) / params.body_length - tilt


def score(
    params: DrosophilaParams, traj: Trajectory, power_weight: float = 0.0, peak_weight: float = 0.0
) -> np.ndarray:
    """Hover fitness per fly from arrays ``(P, [S,] T, ...)`` (:func:`hover` with ``peak_weight``), less
    ``power_weight`` × the mean mechanical power (W/kg, aerodynamic + induced + inertial:
    :mod:`animat.fly.drosophila.power`): the mean over the ``S`` starts; NaN where the fly crashed from any start."""
    value = hover(params, traj.pos.astype(np.float64), traj.quat.astype(np.float64), peak_weight)
    return over_starts(value - power_cost(params, traj, power_weight), traj.crashed)


def power_cost(params: DrosophilaParams, traj: Trajectory, weight: float) -> np.ndarray | float:
    """``weight`` × the mean mechanical power over each flight ``(...)``, W/kg (aerodynamic + induced + inertial:
    :mod:`animat.fly.drosophila.power`); 0 without computing it when ``weight`` is 0."""
    if not weight:
        return 0.0
    power = mechanical_power_per_kg(params, traj.power.astype(np.float64), traj.pattern.astype(np.float64))
    return weight * power.mean(axis=-1)


def task_starts(params: DrosophilaParams, n: int, seed: int, pool: str | None, sha256: str | None) -> DrosophilaState:
    """A task's ``n`` start states: :func:`start_states` by ``seed``, or with ``pool`` (a start pool's ``.npz``,
    checked against ``sha256``: :func:`animat.fly.steer.tracking.read_start_pool`) :func:`pool_start_states`."""
    if pool is None:
        return start_states(params, n, seed)
    from animat.fly.steer.tracking import read_start_pool

    return pool_start_states(params, n, seed, read_start_pool(pool, sha256))


@dataclass(frozen=True)
class HoverFitness:
    """Batched hover fitness for the engine: stacked network tree -> ``(P,)``. Picklable (for Ray)."""

    params: DrosophilaParams
    seconds: float
    activations: tuple[str, ...]
    starts: int = 1  # start 0 at rest in the hover posture; the others perturbed (see start_states)
    seed: int = 0  # seeds the perturbed starts and the sensor noise
    noise: float = 0.0  # sensor-noise std (network-input units) on every start but the first
    power_weight: float = 0.0  # fitness per W/kg of mechanical power (aerodynamic + induced + inertial)
    peak_weight: float = 0.0  # fitness per body length of the largest height change (see hover)
    start_pool: str | None = None  # the perturbed starts from this start pool's .npz (task_starts)
    start_pool_sha256: str | None = None

    def __post_init__(self):
        if not self.seconds > 0:
            raise ConfigError(f"episode length must be > 0 s, got {self.seconds}")
        if self.starts < 1:
            raise ConfigError(f"starts must be >= 1, got {self.starts}")
        if not self.noise >= 0:
            raise ConfigError(f"noise must be >= 0, got {self.noise}")
        if not self.power_weight >= 0:
            raise ConfigError(f"power_weight must be >= 0, got {self.power_weight}")
        if not self.peak_weight >= 0:
            raise ConfigError(f"peak_weight must be >= 0, got {self.peak_weight}")

    def __call__(self, nets) -> np.ndarray:
        starts = task_starts(self.params, self.starts, self.seed, self.start_pool, self.start_pool_sha256)
        n_updates = n_updates_for(self.seconds)
        noise = (
            np.random.default_rng(self.seed + 1)
            .normal(0.0, self.noise, (self.starts, n_updates, N_INPUTS))
            .astype(np.float32)
        )
        noise[0] = 0.0
        traj = simulate_population(self.params, nets, self.activations, self.seconds, starts, noise)
        return score(self.params, traj, self.power_weight, self.peak_weight)


def direction_score(
    params: DrosophilaParams,
    traj: Trajectory,
    cmd_vel: np.ndarray,
    position_weight: float = 0.25,
    velocity_weight: float = 1.0,
    power_weight: float = 0.0,
) -> np.ndarray:
    """Direction fitness per fly from arrays ``(P, S, T, ...)`` of flights whose reference point moved from the
    origin at ``cmd_vel (3,)`` m/s (speed v > 0): ``−(position_weight × tracking + velocity_weight × window error
    + tilt + power_weight × W/kg)``, the mean over the starts, NaN where the fly crashed. Tracking:
    :func:`animat.fly.tasks.tracking` of the position error from the point, in units of the distance the point
    travels in 1 s (``v``), across-track errors twice; window error: :func:`animat.fly.tasks.window_velocity_error`
    over 0.5 s windows of the sampled velocity, the first left out, per ``v`` (0: every window at the command's
    velocity; 1: at rest); tilt: the mean ``1 − cos`` of the stroke plane's angle from level."""
    dt = params.sample_dt
    pos = traj.pos.astype(np.float64)
    t = dt * np.arange(1, pos.shape[-2] + 1)
    cmd = np.broadcast_to(np.asarray(cmd_vel, np.float64), pos.shape)
    speed = float(np.linalg.norm(cmd_vel))
    error = pos - t[:, None] * np.asarray(cmd_vel, np.float64)
    track = -tracking(error, cmd, np.zeros(pos.shape[:-1] + (4,)), speed * 1.0, tilt=0.0)
    velocity = np.diff(pos, axis=-2, prepend=np.zeros_like(pos[..., :1, :])) / dt
    window = window_velocity_error(velocity, cmd, int(round(WINDOW_S / dt)), speed)
    tilt = (1.0 - stroke_plane_tilt_cos(params, traj.quat.astype(np.float64))).mean(axis=-1)
    value = -(position_weight * track + velocity_weight * window + tilt)
    return over_starts(value - power_cost(params, traj, power_weight), traj.crashed)


@dataclass(frozen=True)
class DirectionFitness:
    """Batched fitness of a direction task for the engine (:func:`direction_score`): fly towards ``direction``
    (a key of :data:`DIRECTIONS`) at ``speed`` m/s from ``starts`` start states (start 0 at rest, the others
    perturbed as :class:`HoverFitness`'s, or from ``start_pool``: :func:`task_starts`), each network tracking the
    reference point that moves so from its start. Picklable (for Ray)."""

    params: DrosophilaParams
    seconds: float
    activations: tuple[str, ...]
    direction: str
    speed: float = 0.3
    starts: int = 1
    seed: int = 0
    noise: float = 0.0
    power_weight: float = 0.0
    position_weight: float = 0.25
    velocity_weight: float = 1.0
    start_pool: str | None = None  # the perturbed starts from this start pool's .npz (task_starts)
    start_pool_sha256: str | None = None

    def __post_init__(self):
        if self.direction not in DIRECTIONS:
            raise ConfigError(f"unknown direction {self.direction!r}; choose from {', '.join(DIRECTIONS)}")
        if not self.speed > 0:
            raise ConfigError(f"speed must be > 0 m/s, got {self.speed}")
        if not self.seconds >= 2 * WINDOW_S:
            raise ConfigError(
                f"a direction task's episode must last >= {2 * WINDOW_S} s (two windows), got {self.seconds}"
            )

    @property
    def command_velocity(self) -> np.ndarray:
        """(3,) m/s: the reference point's velocity."""
        return np.asarray(DIRECTIONS[self.direction]) * self.speed

    def __call__(self, nets) -> np.ndarray:
        starts = task_starts(self.params, self.starts, self.seed, self.start_pool, self.start_pool_sha256)
        noise = np.random.default_rng(self.seed + 1).normal(
            0.0, self.noise, (self.starts, n_updates_for(self.seconds), N_INPUTS)
        )
        noise[0] = 0.0
        ref_vel = np.broadcast_to(self.command_velocity, (self.starts, 3))
        traj = simulate_population(
            self.params, nets, self.activations, self.seconds, starts, noise.astype(np.float32), ref_vel=ref_vel
        )
        weights = (self.position_weight, self.velocity_weight, self.power_weight)
        return direction_score(self.params, traj, self.command_velocity, *weights)
