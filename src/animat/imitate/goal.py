"""The optional task goal r_G: move at a target speed along a target heading (DeepMimic's heading task).

Peng et al. 2018, "DeepMimic", §9.1 (target heading)::

    r_G = exp(−2.5 · max(0, v* − d*·v_com)²)

``d*`` is a unit vector in the horizontal plane (the target direction), ``v*`` the target speed
(m/s) and ``v_com`` the character's centre-of-mass velocity (m/s, world). Moving along ``d*`` at
``v*`` or faster scores 1; slower (or off-direction) motion is penalised quadratically in the
shortfall. The total reward is ``r = w_I r_I + w_G r_G`` (:func:`animat.imitate.reward.total_reward`).

A :class:`GoalConfig` says how goals are drawn: the direction is the clip's own direction of travel
(its horizontal cycle displacement; +x if it does not travel) turned by an angle drawn uniformly from
``±heading_range`` (rad; π: any direction, as in DeepMimic), the speed uniformly from ``speed``
(m/s; None: the clip's mean horizontal speed). With ``change_seconds = (lo, hi)`` the goal is
re-drawn after a uniform wait in [lo, hi] s, again and again within an episode; otherwise it is
fixed per episode. :class:`ImitateEnv` adds the goal to its observation: the target direction in
the character's heading frame (x, y) and the speed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animat.config import require
from animat.errors import ConfigError

OBS_SIZE = 3  # direction in the heading frame (x, y), speed (m/s)


def heading_reward(com_vel: np.ndarray, direction: np.ndarray, speed: float, scale: float = 2.5) -> float:
    """r_G = exp(−scale · max(0, v* − d*·v_com)²) for ``com_vel (3,)`` m/s, ``direction (3,)`` horizontal unit
    vector, ``speed`` m/s."""
    shortfall = max(0.0, float(speed) - float(np.dot(direction, com_vel)))
    return float(np.exp(-scale * shortfall**2))


def _is_range(v) -> bool:
    try:
        return len(v) == 2 and 0.0 <= float(v[0]) <= float(v[1]) < np.inf
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class GoalConfig:
    """How target headings and speeds are drawn (see the module docstring). Angles rad, speeds m/s, times s."""

    heading_range: float = float(np.pi)
    speed: tuple[float, float] | None = None
    change_seconds: tuple[float, float] | None = None
    scale: float = 2.5  # 1/(m/s)²

    def __post_init__(self):
        require("goal heading_range (rad)", self.heading_range, ge=0, le=np.pi)
        for name in ("speed", "change_seconds"):
            v = getattr(self, name)
            if v is not None and not _is_range(v):
                raise ConfigError(f"goal {name} must be None or [low, high] with 0 ≤ low ≤ high, got {v!r}")
        if self.change_seconds is not None:
            require("goal change_seconds' high", self.change_seconds[1], gt=0)
        require("goal scale", self.scale, gt=0)


@dataclass(frozen=True)
class Goal:
    """A drawn goal: ``direction (3,)`` horizontal unit vector (world), ``speed`` m/s, in force until ``until`` s (clip
    time)."""

    direction: np.ndarray
    speed: float
    until: float


def draw_goal(
    cfg: GoalConfig, rng: np.random.Generator, clip_advance: np.ndarray, clip_speed: float, now: float
) -> Goal:
    """A new goal at clip time ``now`` (s): a heading around ``clip_advance`` (m, the clip's cycle displacement)."""
    base = (
        float(np.arctan2(clip_advance[1], clip_advance[0]))
        if np.hypot(clip_advance[0], clip_advance[1]) > 1e-9
        else 0.0
    )
    angle = base + float(rng.uniform(-cfg.heading_range, cfg.heading_range))
    speed = clip_speed if cfg.speed is None else float(rng.uniform(cfg.speed[0], cfg.speed[1]))
    until = (
        np.inf if cfg.change_seconds is None else now + float(rng.uniform(cfg.change_seconds[0], cfg.change_seconds[1]))
    )
    return Goal(np.array([np.cos(angle), np.sin(angle), 0.0]), speed, until)
