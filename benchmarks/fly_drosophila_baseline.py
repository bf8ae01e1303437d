"""The drosophila step as it was before issue 50 (commit 73196c2), frozen for ``benchmarks/fly_drosophila.py`` to
time beside today's in one run: the wing frames' rates by differentiating the angles and the frames twice
(every sine and cosine evaluated again in each derivative), ``atan2`` from XLA, and the blade forces as one
vector per element. Benchmark code only: the package has today's step alone.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

from animat.fly.drosophila import pattern
from animat.fly.drosophila import rollout as drosophila_rollout
from animat.fly.drosophila.aero import MIRROR, WingKinematics, drag_coefficient, lift_coefficient
from animat.fly.drosophila.model import DrosophilaParams, stations
from animat.fly.drosophila.physics import DrosophilaState, beat_time, body_drag
from animat.fly.physics import check_crash
from animat.rotations import dot3, integrate_quat, mat_t_vec, mat_vec, quat_to_mat


def wing_frames(params: DrosophilaParams, angles):
    """Span and chord unit vectors ``e_s, e_c (2, 3)`` (body frame) of both wings at ``angles (2, 3)``
    rad (stroke φ, deviation θ, rotation η).

    In the stroke-plane frame (the body frame turned by the stroke-plane angle β about y: level in
    the hover posture) the right wing's span is ``R_z(φ) R_x(−θ) R_y(−η) (−y)`` and its chord (leading
    edge to trailing edge) the same rotation of ``−x``: φ > 0 forward, θ > 0 tip up, η the chord's angle
    from the stroke plane (η < π/2: leading edge up on a forward stroke). The left wing is the mirror image."""
    phi, theta, eta = angles[:, 0], angles[:, 1], angles[:, 2]
    sp, cp, st, ct, se, ce = jnp.sin(phi), jnp.cos(phi), jnp.sin(theta), jnp.cos(theta), jnp.sin(eta), jnp.cos(eta)
    span = jnp.stack([sp * ct, -cp * ct, st], axis=-1)
    chord = jnp.stack([-cp * ce + sp * st * se, -sp * ce - cp * st * se, -ct * se], axis=-1)
    sb, cb = math.sin(params.stroke_plane_angle), math.cos(params.stroke_plane_angle)
    to_body = lambda v: (
        jnp.stack([cb * v[:, 0] + sb * v[:, 2], v[:, 1], -sb * v[:, 0] + cb * v[:, 2]], axis=-1) * MIRROR
    )
    return to_body(span), to_body(chord)


def kinematics(params: DrosophilaParams, angles_at: Callable, t) -> WingKinematics:
    """Wing kinematics at time ``t`` s from ``angles_at(t) -> (2, 3)`` rad, with exact time derivatives
    (forward-mode differentiation of the angles' closed form: no finite differences)."""

    def frames(time):
        return wing_frames(params, angles_at(time))

    def first(time):
        (e_s, e_c), (de_s, de_c) = jax.jvp(frames, (time,), (jnp.ones_like(time),))
        e_n = jnp.cross(e_s, e_c)
        return (e_s, e_c, de_s, de_c), (dot3(de_s, e_n), dot3(de_c, e_n))

    t = jnp.asarray(t, jnp.float32)
    (vecs, _), (_, (da, db)) = jax.jvp(first, (t,), (jnp.ones_like(t),))
    return WingKinematics(*vecs, da, db)


def blade_forces(params: DrosophilaParams, kin: WingKinematics, vel, omega):
    """Air forces on every blade element, body frame.

    ``vel (3,)`` m/s: the body's velocity through still air, in the body frame; ``omega (3,)`` rad/s:
    its angular velocity. Returns ``forces (2, N, 3)`` N at ``points (2, N, 3)`` m (relative to the
    centre of mass) and the aerodynamic power of the wings' own motion ``()`` W (work done on the air per
    second; the body's motion is left out)."""
    r, c, area = (jnp.asarray(x, jnp.float32)[None, :, None] for x in stations(params))  # (1, N, 1)
    hinge = jnp.asarray(params.hinge, jnp.float32) * MIRROR  # (2, 3)
    e_s, e_c, de_s, de_c = (x[:, None, :] for x in (kin.e_s, kin.e_c, kin.de_s, kin.de_c))  # (2, 1, 3)
    e_n = jnp.cross(e_s, e_c)
    points = hinge[:, None, :] + r * e_s
    v_wing = r * de_s  # (2, N, 3): the axis points' velocity relative to the body
    u = -(vel + jnp.cross(omega, points) + v_wing)
    u_c, u_n = dot3(u, e_c)[..., None], dot3(u, e_n)[..., None]
    speed = jnp.sqrt(u_c * u_c + u_n * u_n + 1e-30)
    force = jnp.zeros_like(points)
    if params.translational:
        alpha = jnp.arctan2(jnp.abs(u_n), jnp.abs(u_c))
        side = jnp.sign(u_c * u_n)
        cl, cd = lift_coefficient(alpha), drag_coefficient(alpha)
        force = force + 0.5 * params.rho * area * speed * (
            (cd * u_c - side * cl * u_n) * e_c + (cd * u_n + side * cl * u_c) * e_n
        )
    if params.rotational:
        x_hat = jnp.where(u_c >= 0, params.pitch_axis, 1.0 - params.pitch_axis)
        c_rot = math.pi * (0.75 - x_hat)
        omega_span = dot3(de_c, e_n)[..., None] + dot3(omega, e_s)[..., None]
        force = force - jnp.sign(u_c) * c_rot * params.rho * speed * c * area * omega_span * e_n
    if params.added_mass:
        mid = (0.5 - params.pitch_axis) * c
        a_n = r * kin.da[:, None, None] + mid * kin.db[:, None, None]
        force = force - params.rho * (math.pi / 4.0) * c * area * a_n * e_n
    power = -jnp.sum(dot3(force, v_wing))
    return force, points, power


def air_forces(params: DrosophilaParams, state: DrosophilaState, R):
    """Blade forces ``(2, N, 3)`` (body frame), their points ``(2, N, 3)`` and the wings' aerodynamic
    power ``()`` W at the state's time. ``R (3, 3)``: the body's orientation matrix."""
    sharp = params.rotation_sharpness
    kin = kinematics(params, lambda t: pattern.angles(state.pattern, sharp, t), beat_time(params, state))
    return blade_forces(params, kin, mat_t_vec(R, state.vel), state.omega)


def step_with_power(params: DrosophilaParams, state: DrosophilaState):
    """One physics step of ``dt``; returns the new state and the wings' aerodynamic power ``()`` W."""
    dt = params.dt
    R = quat_to_mat(state.quat)
    forces, points, power = air_forces(params, state, R)
    f_body = forces.reshape(-1, 3)
    force = mat_vec(R, f_body.sum(0)) + body_drag(params, state, R)
    acc = force / params.mass + jnp.array([0.0, 0.0, -params.gravity], jnp.float32)
    inertia = jnp.asarray(params.inertia(), jnp.float32)
    torque = jnp.cross(points.reshape(-1, 3), f_body).sum(0)
    omega = state.omega + (torque - jnp.cross(state.omega, inertia * state.omega)) / inertia * dt
    new = state._replace(
        pos=state.pos + state.vel * dt + 0.5 * acc * dt * dt,
        vel=state.vel + acc * dt,
        omega=omega,
        quat=integrate_quat(state.quat, omega, dt),
        pattern=state.pattern._replace(k=state.pattern.k + 1),
    )
    return check_crash(params, state, new), power


@contextlib.contextmanager
def baseline_step():
    """Within the block, :func:`animat.fly.drosophila.rollout.population_rollout` builds (uncached) rollouts of
    the frozen step above; a jitted rollout keeps the step it was first called with."""
    today = drosophila_rollout.step_with_power
    drosophila_rollout.step_with_power = step_with_power
    try:
        yield
    finally:
        drosophila_rollout.step_with_power = today
