"""Rigid-body flight of the fruit fly: pure, jittable ``step(params, state) -> state`` (SI units).

Each step of ``dt`` (0.1 ms default: 46 steps per beat at 218 Hz) evaluates the wings' kinematics from
the pattern generator's closed form at the step's start, their blade-element air forces
(:mod:`animat.fly.drosophila.aero`), the body's drag ``−½ρ C_D (Σ_i A_i |v_i|) v`` (``A_i`` the
spheroid's projected areas across the body axes, ``v_i`` the body-frame velocity components) and
gravity, and integrates as the paper preset does: ``pos += v dt + a dt²/2`` (exact for free fall),
``v += a dt``, Euler's equations ``I ω̇ = τ − ω × I ω`` and the quaternion exponential map. The wings are
massless (see :mod:`animat.fly.drosophila.model`). A fly whose state turns non-finite or whose speed
passes the runaway limits is marked ``crashed`` and frozen from then on (the paper preset's check).

The network's new pattern enters at the end of each wingbeat through :func:`set_pattern`; the step
itself takes no control, the pattern state carries it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from animat.fly.drosophila import pattern
from animat.fly.drosophila.aero import air_loads, kinematics
from animat.fly.drosophila.model import DrosophilaParams
from animat.fly.physics import (
    check_crash,
)  # the paper preset's: duck-typed on max_speed, max_angular_speed and the state's fields
from animat.rotations import dot3, integrate_quat, mat_t_vec, mat_vec, quat_mul, quat_to_mat


class DrosophilaState(NamedTuple):
    """State of one fly (add a leading axis for a population): pos (3,) m, world; vel (3,) m/s, world;
    quat (4,) w-first, body -> world; omega (3,) rad/s, body frame; wingbeat pattern generator state;
    crashed () bool."""

    pos: jax.Array
    vel: jax.Array
    quat: jax.Array
    omega: jax.Array
    pattern: pattern.PatternState
    crashed: jax.Array


def pitch_quat(pitch: float) -> np.ndarray:
    """Quaternion ``(4,)`` of the body pitched nose up by ``pitch`` rad (a rotation by −pitch about body y, left)."""
    return np.array([math.cos(pitch / 2), 0.0, -math.sin(pitch / 2), 0.0], np.float32)


def initial_state(params: DrosophilaParams, p, pos=(0.0, 0.0, 0.0), vel=(0.0, 0.0, 0.0)) -> DrosophilaState:
    """A fly in the hover posture (pitched up by the stroke-plane angle, so the stroke plane is level) at
    ``pos`` m moving at ``vel`` m/s, its wings beating with pattern parameters ``p (11,)`` from phase 0."""
    f32 = jnp.float32
    return DrosophilaState(
        pos=jnp.asarray(pos, f32),
        vel=jnp.asarray(vel, f32),
        quat=jnp.asarray(pitch_quat(params.stroke_plane_angle)),
        omega=jnp.zeros(3, f32),
        pattern=pattern.start(p),
        crashed=jnp.array(False),
    )


def stroke_plane_quat(params: DrosophilaParams, quat):
    """Orientation ``(..., 4)`` of the stroke-plane frame (body turned by the stroke-plane angle about y):
    the identity in the hover posture."""
    return quat_mul(quat, jnp.asarray(pitch_quat(-params.stroke_plane_angle)))


def wing_angles(params: DrosophilaParams, state: DrosophilaState):
    """The wings' angles ``(2, 3)`` rad at the state's time."""
    return pattern.angles(state.pattern, params.rotation_sharpness, beat_time(params, state))


def beat_time(params: DrosophilaParams, state: DrosophilaState):
    """Time ``()`` s since the current wingbeat started."""
    return state.pattern.k * jnp.float32(params.dt)


def beat_done(params: DrosophilaParams, state: DrosophilaState):
    """Whether the current wingbeat has ended (the network sets the next one's pattern then)."""
    return pattern.beat_done(state.pattern, beat_time(params, state))


def air_forces(params: DrosophilaParams, state: DrosophilaState, R):
    """The wings' air force ``(3,)`` N and its torque ``(3,)`` N m (body frame) and their aerodynamic power
    ``()`` W at the state's time (:func:`animat.fly.drosophila.aero.air_loads`). ``R (3, 3)``: the body's
    orientation matrix."""
    sharp = params.rotation_sharpness
    kin = kinematics(params, lambda t: pattern.angles(state.pattern, sharp, t), beat_time(params, state))
    return air_loads(params, kin, mat_t_vec(R, state.vel), state.omega)


def body_drag(params: DrosophilaParams, state: DrosophilaState, R):
    """Drag on the body, world frame ``(3,)`` N."""
    areas = jnp.asarray(params.body_areas(), jnp.float32)
    return -0.5 * params.rho * params.cd_body * dot3(areas, jnp.abs(mat_t_vec(R, state.vel))) * state.vel


def step_with_power(params: DrosophilaParams, state: DrosophilaState):
    """One physics step of ``dt``; returns the new state and the wings' aerodynamic power ``()`` W."""
    dt = params.dt
    R = quat_to_mat(state.quat)
    f_body, torque, power = air_forces(params, state, R)
    force = mat_vec(R, f_body) + body_drag(params, state, R)
    acc = force / params.mass + jnp.array([0.0, 0.0, -params.gravity], jnp.float32)
    inertia = jnp.asarray(params.inertia(), jnp.float32)
    omega = state.omega + (torque - jnp.cross(state.omega, inertia * state.omega)) / inertia * dt
    new = state._replace(
        pos=state.pos + state.vel * dt + 0.5 * acc * dt * dt,
        vel=state.vel + acc * dt,
        omega=omega,
        quat=integrate_quat(state.quat, omega, dt),
        pattern=state.pattern._replace(k=state.pattern.k + 1),
    )
    return check_crash(params, state, new), power


def step(params: DrosophilaParams, state: DrosophilaState) -> DrosophilaState:
    """One physics step of ``dt``. Pure and jittable."""
    return step_with_power(params, state)[0]


def set_pattern(params: DrosophilaParams, state: DrosophilaState, target) -> DrosophilaState:
    """End the wingbeat and blend towards new pattern parameters ``target (11,)`` over the next one."""
    return state._replace(pattern=pattern.advance(state.pattern, beat_time(params, state), target))
