"""Flight commands: their names, world-frame directions and command scripts (``"up:1,forward:2"``).

Shared by the steering tasks, ``animat fly steer``, the goal-conditioned network and the Gymnasium
environments (:mod:`animat.fly.env`), so that all of them mean the same thing by a command.

Directions are in the world frame relative to the fly's heading when the command starts: ``forward``
is the body's long axis (+y in the body frame, :mod:`animat.fly.model`) projected on the ground,
``left`` is 90° to its left (counter-clockwise seen from above), ``up`` is +z. ``hover`` has no
direction (zeros): stay near the point where the command began.

The goal network's command input (:func:`animat.fly.steer.tracking.command_input`) is the commanded velocity in
the command frame divided by :data:`COMMAND_SCALE`, :data:`animat.fly.rollout.VEL_SCALE`'s 10 u/s, the
same scale as its velocity input.
"""

from __future__ import annotations

import math

import numpy as np

from animat.errors import ConfigError
from animat.scripts import parse_timed

COMMANDS = ("hover", "forward", "back", "left", "right", "up", "down")
COMMAND_SCALE = 10.0  # u/s per unit of command input (= animat.fly.rollout.VEL_SCALE; this module imports no JAX)


def heading(quat, xp=np) -> np.ndarray:
    """Heading angle ``(...)`` rad of unit quaternions ``quat (..., 4)`` (w, x, y, z, body to world):
    the angle of the body's +y axis projected on the ground, counter-clockwise from the world's +y.
    A body standing on its nose has no heading; it is then taken from the body's −z axis.
    ``xp``: the array module (NumPy, in float64; ``jax.numpy`` inside jitted flight, in the quaternion's dtype)."""
    q = np.asarray(quat, np.float64) if xp is np else quat
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    fx, fy = 2 * (x * y - w * z), 1 - 2 * (x * x + z * z)  # R[:, 1] (body y in world), x and y parts
    flat = xp.hypot(fx, fy) < 1e-6
    fx = xp.where(flat, -2 * (x * z + w * y), fx)  # −R[:, 2]
    fy = xp.where(flat, -2 * (y * z - w * x), fy)
    return xp.arctan2(-fx, fy)


def direction(name: str, yaw: float = 0.0) -> np.ndarray:
    """World-frame unit vector ``(3,)`` of command ``name`` for a fly whose heading is ``yaw`` rad when
    the command starts; zeros for ``hover``."""
    check_command(name)
    fwd = np.array([-math.sin(yaw), math.cos(yaw), 0.0])
    left = np.array([-math.cos(yaw), -math.sin(yaw), 0.0])
    up = np.array([0.0, 0.0, 1.0])
    return {"hover": 0 * up, "forward": fwd, "back": -fwd, "left": left, "right": -left, "up": up, "down": -up}[name]


def check_command(name: str) -> str:
    if name not in COMMANDS:
        raise ConfigError(f"unknown command {name!r}; choose from {', '.join(COMMANDS)}")
    return name


def parse_script(text: str) -> list[tuple[str, float]]:
    """``"up:1,forward:2,hover:2"`` -> ``[("up", 1.0), ("forward", 2.0), ("hover", 2.0)]`` (seconds > 0).
    Raises ConfigError with one line for an unknown name, a missing or non-positive duration or an
    empty script (:func:`animat.scripts.parse_timed`)."""
    return parse_timed(text, check_command, "name", "up:1,forward:2")


def random_script(rng: np.random.Generator, total: float = 20.0, shortest: float = 2.0, longest: float = 4.0) -> str:
    """A command script of every command once, in a random order, each ``shortest``-``longest`` s (whole
    0.1 s), ``total`` s in all (issue 21's random sequences: the acceptance tests draw them, and the steering
    set's hand-over pools are recorded on them, :func:`animat.fly.steer.pilot.handover_states`)."""
    tenths, n = int(round(total * 10)), len(COMMANDS)
    lo, hi = int(round(shortest * 10)), int(round(longest * 10))
    if not (0 < lo <= hi and n * lo <= tenths <= n * hi):
        raise ConfigError(f"no script of the {n} commands, each {shortest}-{longest} s, lasts {total} s")
    while True:
        extra = rng.multinomial(tenths - n * lo, np.ones(n) / n)
        if (extra <= hi - lo).all():
            break
    order = rng.permutation(COMMANDS)
    return ",".join(f"{name}:{(lo + e) / 10:g}" for name, e in zip(order, extra))
