"""The drosophila rollout as it was before issue 50 (commit 73196c2), frozen for ``benchmarks/fly_drosophila.py``
to time beside today's in one run. Its step: the wing frames' rates by differentiating the angles and the frames
twice (every sine and cosine evaluated again in each derivative), ``atan2`` from XLA, and the blade forces as one
vector per element. Its rollout: one fly's scan under ``vmap``, the network evaluated at every physics step for
every fly (its output used only where a beat ends). Benchmark code only: the package has today's alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from animat.evolve.network import activate
from animat.fly.drosophila import pattern
from animat.fly.drosophila.aero import MIRROR, WingKinematics, drag_coefficient, lift_coefficient
from animat.fly.drosophila.model import DrosophilaParams, stations
from animat.fly.drosophila.physics import (
    DrosophilaState,
    beat_done,
    beat_time,
    body_drag,
    set_pattern,
    wing_angles,
)
from animat.fly.drosophila.rollout import Trajectory, observe
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


def rollout(
    params: DrosophilaParams,
    net,
    activations: Sequence[str],
    n_ticks: int,
    state0: DrosophilaState,
    noise,
    wing_every: int = 0,
):
    """Fly one network for ``n_ticks`` samples of ``sample_dt`` from ``state0`` (its pattern is replaced by
    the network's first choice, so the fly starts beating as it means to go on); returns (final state,
    Trajectory). ``noise (U, 12)``: sensor noise added to the network's successive observations (U ≥
    ``n_updates_for`` the flight's seconds; the first observation gets ``noise[0]``)."""
    n_steps = params.steps_per_sample
    if wing_every and n_steps % wing_every:
        raise ValueError(f"wing_every ({wing_every}) must divide the {n_steps} steps of a sample")
    last = noise.shape[0] - 1

    def policy(state, vel, omega, obs_noise):
        obs = observe(params, state, state0.pos, vel, omega) + obs_noise
        return pattern.from_outputs(activate(net, obs[:, None], activations)[:, 0])

    per_control = params.steps_per_control

    def physics_step(carry, _):
        # vel, omega: sums since the network last acted, at step g_last (so over g - g_last steps)
        state, vel, omega, updates, g, g_last, power = carry
        new, p = step_with_power(params, state)  # the frozen step above
        vel, omega, g = vel + new.vel, omega + new.omega, g + 1
        n = (g - g_last).astype(jnp.float32)
        done = beat_done(params, new)
        acts = done & ((g // per_control > g_last // per_control) if per_control else True)
        target = jnp.where(acts, policy(new, vel / n, omega / n, noise[jnp.minimum(updates, last)]), new.pattern.p_to)
        new = jax.tree_util.tree_map(lambda a, b: jnp.where(done, a, b), set_pattern(params, new, target), new)
        keep = jnp.where(acts, 0.0, 1.0)
        carry = (
            new,
            vel * keep,
            omega * keep,
            updates + acts.astype(updates.dtype),
            g,
            jnp.where(acts, g, g_last),
            power + p,
        )
        return carry, (wing_angles(params, state), state.pos, state.quat)

    def tick(carry, _):
        (state, vel, omega, updates, g, g_last, power), (wings, fine_pos, fine_quat) = jax.lax.scan(
            physics_step, (*carry, jnp.float32(0.0)), None, length=n_steps
        )
        keep = slice(None, None, wing_every) if wing_every else slice(0, 0)
        record = Trajectory(
            state.pos,
            state.quat,
            state.crashed,
            power / n_steps,
            state.pattern.p_to,
            updates,
            wings[keep],
            fine_pos[keep],
            fine_quat[keep],
        )
        return (state, vel, omega, updates, g, g_last), record

    first = policy(state0, state0.vel, state0.omega, noise[0])
    state0 = state0._replace(pattern=pattern.start(first)._replace(psi0=state0.pattern.psi0))
    zero = jnp.zeros(3, jnp.float32)
    carry = (state0, zero, zero, jnp.int32(1), jnp.int32(0), jnp.int32(0))
    (state, *_), traj = jax.lax.scan(tick, carry, None, length=n_ticks)
    return state, traj


def baseline_rollout(params: DrosophilaParams, activations: tuple[str, ...], n_ticks: int, wing_every: int = 0):
    """The jitted ``(nets (P, ...) stacked tree, starts: DrosophilaState (S, ...), noise (S, U, 12)) ->
    Trajectory (P, S, T, ...)`` of before issue 50 (uncached): every network flies from every start with that
    start's sensor noise."""

    def run(nets, starts, noise):
        one = lambda net: jax.vmap(lambda s0, n: rollout(params, net, activations, n_ticks, s0, n, wing_every)[1])(
            starts, noise
        )
        return jax.vmap(one)(nets)

    return jax.jit(run)
