"""Fly parameters (the "paper" preset) and body geometry.

The preset keeps the original 2022 project's simulation units and constants: body 2 × 4 × 1
units (x = width, y = length, forward; z = height, up), mass 5, triangular wings with legs 3
(span) and 2 (root chord) hinged at the body's sides, air density 0.1225, drag coefficient 1.28,
g = 9.81, wing limits flap ±π/3, feathering ±0.4, sweep ±0.2 rad. What changed to make it
physically sound is listed in :mod:`animat.fly.physics`.

Wing angles are ordered ``(flap, feather, sweep)``:
- flap: rotation about the body's long axis at the hinge, positive = tip up;
- feather: rotation about the wing's span (leading-edge) axis, positive = leading edge up;
- sweep: rotation about the body's vertical axis at the hinge, positive = tip forward (+y).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import ClassVar

import numpy as np

from animat.config import check_instance, check_known, option
from animat.errors import ConfigError


@dataclass(frozen=True)
class FlyParams:
    """Physical and numerical parameters of one fly (hashable: passed to jit as a static argument).

    Units: the preset's simulation units (length u, mass m, time s). Angles in rad.
    """

    body_size: tuple[float, float, float] = option((2.0, 4.0, 1.0), "(width x, length y, height z), u", gt=0)
    mass: float = option(5.0, "Body mass, m", gt=0)
    wing_span: float = option(3.0, "Leg of the wing triangle along the span (outwards), u", gt=0)
    wing_chord: float = option(2.0, "Leg of the wing triangle along the body (backwards from the hinge), u", gt=0)
    # Right-wing hinge in the body frame (left wing: mirrored in x): on the upper edge of the side,
    # as an insect's wings sit on top of the thorax. y = 0.4 puts the centre of pressure of a flat
    # flapping wing (area weighted by r^2) over the centre of mass.
    hinge: tuple[float, float, float] = option((1.0, 0.4, 0.5), "Right-wing hinge in the body frame, u")
    rho: float = option(0.1225, "Air density", ge=0)
    cd_wing: float = option(1.28, "Flat-plate drag coefficient of a wing", ge=0)
    cd_body: float = option(1.28, "Drag coefficient of the body", ge=0)
    gravity: float = option(9.81, "Gravity, u/s^2")
    angle_limits: tuple[float, float, float] = option((math.pi / 3, 0.4, 0.2), "± (flap, feather, sweep), rad", ge=0)
    # Angular-speed limits (rad/s). 30 rad/s flap lets a fast-down/slow-up feathering stroke lift
    # ~1.8× the weight (tests/fly/test_physics.py); the original had none.
    speed_limits: tuple[float, float, float] = option(
        (30.0, 20.0, 10.0), "Wing angular-speed limits (flap, feather, sweep), rad/s", gt=0
    )
    dt: float = option(0.001, "Physics step, s", gt=0)
    control_dt: float = option(0.01, "The network sets new wing targets this often, s", gt=0)
    wing_elements: int = option(2, "Each wing is split into wing_elements² sub-triangles for the air force", ge=1)
    max_speed: float = option(1.0e3, "|v| above this (u/s) is a crash (runaway)")
    max_angular_speed: float = option(1.0e3, "|omega| above this (rad/s) is a crash")
    asymmetric: bool = option(False, "True: the network drives both wings (18 inputs, 6 outputs)")
    OPTION_TYPED: ClassVar[bool] = True  # "wing_elements must be an integer >= 1"

    def __post_init__(self):
        check_instance(self)
        ratio = self.control_dt / self.dt
        if abs(ratio - round(ratio)) > 1e-6 or round(ratio) < 1:
            raise ConfigError(f"control_dt ({self.control_dt} s) must be a whole multiple of dt ({self.dt} s)")
        if not self.max_speed > 0 or not self.max_angular_speed > 0:
            raise ConfigError(
                f"max_speed and max_angular_speed must be > 0, got {self.max_speed} and {self.max_angular_speed}"
            )

    @property
    def steps_per_control(self) -> int:
        return int(round(self.control_dt / self.dt))

    @property
    def body_length(self) -> float:
        return float(max(self.body_size))

    @property
    def n_inputs(self) -> int:
        """Observation size: position, orientation, velocity, angular velocity (3 each) + wing angles."""
        return 12 + (6 if self.asymmetric else 3)

    @property
    def n_outputs(self) -> int:
        return 6 if self.asymmetric else 3

    def inertia(self) -> np.ndarray:
        """Principal moments of the solid cuboid about its centre, ``(3,)``: m (b² + c²) / 12, ..."""
        a, b, c = self.body_size
        return self.mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict) -> FlyParams:
        check_known((f.name for f in fields(cls)), values, "fly parameter")
        return cls(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
        )  # checked before any arithmetic

    def with_(self, **changes) -> FlyParams:
        return replace(self, **changes)


def box_corners(size) -> np.ndarray:
    """The 8 corners ``(8, 3)`` of a box centred at 0, index = 4*ix + 2*iy + iz (0 = minus side)."""
    half = np.asarray(size, dtype=np.float32) / 2.0
    signs = np.array([[sx, sy, sz] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)], dtype=np.float32)
    return signs * half


def wing_triangle(params: FlyParams) -> np.ndarray:
    """Right wing's 3 points in its own frame (origin at the hinge): hinge, tip, root trailing edge."""
    return np.array([[0.0, 0.0, 0.0], [params.wing_span, 0.0, 0.0], [0.0, -params.wing_chord, 0.0]], dtype=np.float32)


def wing_elements(params: FlyParams) -> tuple[np.ndarray, np.ndarray]:
    """Quadrature points ``(K, 3)`` (wing frame) and their areas ``(K,)`` for integrating air forces.

    The wing is split into ``wing_elements²`` equal sub-triangles, each integrated with the
    edge-midpoint rule (3 points, weight area/3 each), which is exact for quadratics — the flat-plate
    force ``(n·v)²`` is quadratic over a rigid flat wing while ``n·v`` keeps its sign. Shared
    midpoints are merged (``3 n (n + 1) / 2`` points).
    """
    n = params.wing_elements
    p0, p1, p2 = wing_triangle(params).astype(np.float64)
    grid = lambda i, j: p0 + (i / n) * (p1 - p0) + (j / n) * (p2 - p0)
    tris = []
    for i in range(n):
        for j in range(n - i):
            tris.append((grid(i, j), grid(i + 1, j), grid(i, j + 1)))
            if i + j < n - 1:
                tris.append((grid(i + 1, j), grid(i + 1, j + 1), grid(i, j + 1)))
    area = 0.5 * params.wing_span * params.wing_chord / (n * n)
    weights: dict[tuple, float] = {}
    for a, b, c in tris:
        for m in ((a + b) / 2, (b + c) / 2, (a + c) / 2):
            key = tuple(np.round(m, 9))
            weights[key] = weights.get(key, 0.0) + area / 3.0
    pts = np.array(list(weights), dtype=np.float32)
    return pts, np.array(list(weights.values()), dtype=np.float32)
