"""Rigid-body flight physics of the fly: pure, jittable ``step(params, state, target) -> state``.

Forces (Newton–Euler, body frame for rotation):
- wings: each wing is split into small triangles; on each, the quasi-steady flat-plate force
  ``F = −½ ρ C_D A (n·v)|n·v| n`` with ``n`` the unit normal, ``A`` the element area and ``v`` the
  element's air velocity from the body's motion *and* the wing's own angular velocity (no finite
  difference of jumps). This is the original ``½ ρ v|v| C_D A`` with the area vector ``A n`` projected
  on the velocity instead of on the world axes, which makes it independent of how the world axes are
  chosen. Torque ``τ = r × F`` about the centre of mass (the original had ``F × r``, the wrong sign).
- body: drag ``−½ ρ C_D (Σ_i A_i |v_i|) v`` with ``A_i`` the face areas and ``v_i`` the body-frame
  velocity components (i.e. the box's area projected across the flow, times |v| v); gravity.
- the wings are massless: they change the body's motion only through air forces.

Integration every ``dt`` (1 ms default), explicit: the acceleration at the start of the step moves the
position by ``v dt + a dt²/2`` (exact for free fall) and the velocity by ``a dt`` (forward Euler, first
order once drag acts); rotation by Euler's equations ``I ω̇ = τ − ω × I ω`` and the quaternion
exponential map. No artificial damping. Being explicit, the quadratic air damping overshoots once
``k |ω| dt`` passes 1 (k ≈ 2.5 per rad for roll with the preset): above ~400 rad/s at 1 ms, ~40 rad/s at
10 ms; the runaway limit below is 1000 rad/s, so keep ``dt`` near the default. A fly whose state turns
non-finite or whose speed exceeds the runaway limits is marked ``crashed`` and frozen from then on
(counted, never hidden).

Limitations: the wing force is a flat plate's pressure drag (normal coefficient C_D sin²α, 1.28 at
90°), not the Dickinson et al. (1999) quasi-steady coefficients (C_N ≈ 2.5 at 45°, 3.5 at 90°); no
rotational circulation, added mass or buoyancy. A left-right symmetric fly (one network output driving
both wings) stays symmetric only to float32 rounding: it has no actuation against roll or yaw, so
rounding-level asymmetry can grow into a roll or sideways drift over seconds of flight (how often:
RESULTS.md, 'Measurements behind the code'). Fitness and replays include that drift,
deterministically; ``asymmetric`` flies (one output per wing) can act against it. (Summing each element
with its mirror image does not make the sums exact: XLA fuses the products into the adds differently.)
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from animat.fly.kinematics import servo, wing_points_body
from animat.fly.model import FlyParams, wing_elements
from animat.rotations import dot3, integrate_quat, mat_t_vec, mat_vec, quat_to_mat, sum_rows


class FlyState(NamedTuple):
    """State of one fly (add a leading axis for a population).

    pos (3,) u, world; vel (3,) u/s, world; quat (4,) w-first, body -> world; omega (3,) rad/s,
    body frame; wing (2, 3) rad, (right, left) × (flap, feather, sweep); crashed () bool.
    """

    pos: jax.Array
    vel: jax.Array
    quat: jax.Array
    omega: jax.Array
    wing: jax.Array
    crashed: jax.Array


def initial_state(pos=(0.0, 0.0, 0.0), wing=None) -> FlyState:
    """A fly at rest, level, at ``pos``, wings at ``wing (2, 3)`` rad (default: all zero)."""
    f32 = jnp.float32
    return FlyState(
        pos=jnp.asarray(pos, f32),
        vel=jnp.zeros(3, f32),
        quat=jnp.array([1.0, 0.0, 0.0, 0.0], f32),
        omega=jnp.zeros(3, f32),
        wing=jnp.zeros((2, 3), f32) if wing is None else jnp.asarray(wing, f32),
        crashed=jnp.array(False),
    )


def wing_forces_body(params: FlyParams, R, state: FlyState, angles, rates):
    """Air forces on all wing elements, body frame ``(2K, 3)``, and their points ``(2K, 3)`` (body frame).
    ``R (3, 3)`` is the body's orientation matrix (passed in so a step computes it once)."""
    _, area = wing_elements(params)
    area = jnp.tile(jnp.asarray(area), 2)[:, None]  # (2K, 1): right then left
    pts, vrel, nrm = wing_points_body(params, angles, rates)
    v_body = mat_t_vec(R, state.vel) + jnp.cross(state.omega, pts) + vrel  # element velocity, body frame
    vn = dot3(v_body, nrm)[..., None]
    return -0.5 * params.rho * params.cd_wing * area * vn * jnp.abs(vn) * nrm, pts


def wing_forces(params: FlyParams, state: FlyState, angles, rates):
    """Air forces on all wing elements. Returns ``forces (2K, 3)`` world frame and ``points (2K, 3)`` body frame."""
    R = quat_to_mat(state.quat)
    f_body, pts = wing_forces_body(params, R, state, angles, rates)
    return mat_vec(R, f_body), pts


def body_drag(params: FlyParams, state: FlyState, R=None):
    """Drag on the body, world frame ``(3,)``: −½ ρ C_D (Σ A_i |v_i|) v."""
    a, b, c = params.body_size
    faces = jnp.array([b * c, a * c, a * b], jnp.float32)  # areas normal to body x, y, z
    v_body = mat_t_vec(quat_to_mat(state.quat) if R is None else R, state.vel)
    return -0.5 * params.rho * params.cd_body * dot3(faces, jnp.abs(v_body)) * state.vel


def body_step(params: FlyParams, state: FlyState, forces, points) -> FlyState:
    """Integrate the body over ``dt`` under point ``forces (K, 3)`` (world) at ``points (K, 3)`` (body
    frame, relative to the centre of mass) plus body drag and gravity. Wing angles are left as they are."""
    R = quat_to_mat(state.quat)
    return integrate_body(params, state, R, sum_rows(forces), mat_t_vec(R, forces), points)


def integrate_body(params: FlyParams, state: FlyState, R, force_world, forces_body, points) -> FlyState:
    """Newton–Euler update over ``dt``: net point force ``force_world (3,)``, the same forces in the body
    frame ``forces_body (K, 3)`` acting at ``points (K, 3)`` (for the torque), plus drag and gravity."""
    dt = params.dt
    inertia = jnp.asarray(params.inertia(), jnp.float32)
    force = force_world + body_drag(params, state, R)
    acc = force / params.mass + jnp.array([0.0, 0.0, -params.gravity], jnp.float32)
    torque = sum_rows(jnp.cross(points, forces_body))  # τ = r × F, body frame
    omega_dot = (torque - jnp.cross(state.omega, inertia * state.omega)) / inertia
    omega = state.omega + omega_dot * dt
    return state._replace(
        pos=state.pos + state.vel * dt + 0.5 * acc * dt * dt,
        vel=state.vel + acc * dt,
        omega=omega,
        quat=integrate_quat(state.quat, omega, dt),
    )


def check_crash(params: FlyParams, old: FlyState, new: FlyState) -> FlyState:
    """Mark a fly crashed (and keep its last finite state) once it turns non-finite or runs away."""
    finite = jnp.all(jnp.array([jnp.all(jnp.isfinite(x)) for x in (new.pos, new.vel, new.quat, new.omega)]))
    sane = (jnp.linalg.norm(new.vel) < params.max_speed) & (jnp.linalg.norm(new.omega) < params.max_angular_speed)
    crashed = old.crashed | ~(finite & sane)
    kept = jax.tree_util.tree_map(lambda o, n: jnp.where(crashed, o, n), old, new)
    return kept._replace(crashed=crashed)


def step(params: FlyParams, state: FlyState, target) -> FlyState:
    """One physics step of ``dt``: servo the wings towards ``target (2, 3)`` rad, apply air forces,
    gravity and drag, integrate. Pure and jittable."""
    rates, wing = servo(params, state.wing, target)
    R = quat_to_mat(state.quat)
    f_body, points = wing_forces_body(params, R, state, state.wing, rates)
    new = integrate_body(params, state, R, mat_vec(R, sum_rows(f_body)), f_body, points)._replace(wing=wing)
    return check_crash(params, state, new)
