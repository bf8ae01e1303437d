"""Quasi-steady blade-element aerodynamics of the fruit fly's wings (SI units, body frame).

Each wing is a rigid flat plate cut into span stations (:func:`animat.fly.drosophila.model.stations`),
each a strip of chord ``c``, area ``A = c dr``, at distance ``r`` from the hinge along the span axis,
whose leading edge is ``x̂0 c`` ahead of that axis. At a station's axis point, with ``u`` the air's
velocity relative to the wing (from the wing's motion and the body's), split into chordwise ``u_c``
(leading edge to trailing edge) and normal ``u_n`` parts (the spanwise part is dropped), ``U² = u_c² + u_n²``
and the angle of attack ``α = atan2(|u_n|, |u_c|)`` (0–90°):

- translational (Dickinson, Lehmann & Sane 1999, Science 284, 1954–1960, α in degrees):
  ``C_L = 0.225 + 1.58 sin(2.13α − 7.20°)``, ``C_D = 1.92 − 1.55 cos(2.04α − 9.82°)``; drag ``½ρ A C_D U u``
  along the flow, lift ``½ρ A C_L U²`` across it in the chord–normal plane, on the side the flow pushes
  the plate towards;
- rotational circulation (Sane & Dickinson 2002, J. Exp. Biol. 205, 1087–1096):
  ``C_rot ρ U c A ω_s`` normal to the plate, ``ω_s`` the rotation rate about the span axis,
  ``C_rot = π (3/4 − x̂)`` with ``x̂`` the axis' distance behind the leading edge met by the flow
  (``x̂0``, or ``1 − x̂0`` when the flow comes from the trailing edge); it adds to the normal force when
  the rotation raises the angle of attack;
- added mass (the flat plate's ``ρ π c² / 4`` per unit span, as in Sane & Dickinson 2001's
  blade-element form): ``−ρ (π/4) c A a_n`` normal to the plate, ``a_n`` the rate of change of the
  normal velocity of the strip's mid-chord from the wing's own motion (the body's acceleration is left
  out: the wing's added mass, ~10⁻⁹ kg, is 0.1 % of the body's).

All forces act at the station's axis point (for the torque on the body). Each term can be switched off
(``params.translational`` / ``rotational`` / ``added_mass``). Limitations: no wake capture, no
induced flow (downwash), no spanwise flow; the lift flips direction with the chordwise flow, a jump of
2 C_L(90°) = 0.2 at α = 90°.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from animat.fly.drosophila import trig
from animat.fly.drosophila.fusion import once
from animat.fly.drosophila.jets import Jet, sincos
from animat.fly.drosophila.model import DrosophilaParams, stations
from animat.rotations import dot3

DEG = math.pi / 180.0
MIRROR = np.array([[1.0, 1.0, 1.0], [1.0, -1.0, 1.0]], np.float32)  # (right, left): left = right mirrored in y


def lift_coefficient(alpha):
    """Dickinson, Lehmann & Sane (1999) translational lift coefficient; ``alpha`` in rad."""
    return 0.225 + 1.58 * jnp.sin((2.13 * alpha / DEG - 7.20) * DEG)


def drag_coefficient(alpha):
    """Dickinson, Lehmann & Sane (1999) translational drag coefficient; ``alpha`` in rad."""
    return 1.92 - 1.55 * jnp.cos((2.04 * alpha / DEG - 9.82) * DEG)


def wing_frames(params: DrosophilaParams, angles):
    """Span and chord unit vectors ``e_s, e_c (2, 3)`` (body frame) of both wings at ``angles (2, 3)``
    rad (stroke φ, deviation θ, rotation η).

    In the stroke-plane frame (the body frame turned by the stroke-plane angle β about y: level in
    the hover posture) the right wing's span is ``R_z(φ) R_x(−θ) R_y(−η) (−y)`` and its chord (leading
    edge to trailing edge) the same rotation of ``−x``: φ > 0 forward, θ > 0 tip up, η the chord's angle
    from the stroke plane (η < π/2: leading edge up on a forward stroke). The left wing is the mirror image."""
    sin, cos = jnp.sin(angles), jnp.cos(angles)
    span, chord = frames_of(*((sin[:, i], cos[:, i]) for i in range(3)))
    body = to_body(params, jnp.stack([jnp.stack(span, axis=-1), jnp.stack(chord, axis=-1)], axis=1))
    return body[:, 0], body[:, 1]


def frames_of(phi, theta, eta):
    """The right wing's span and chord in the stroke-plane frame (:func:`wing_frames`; the left wing's before
    its mirroring) as x, y, z components, from the sine and cosine of each angle, ``phi = (sin φ, cos φ)``
    and so on: a polynomial in them, so the same code carries jets (:mod:`animat.fly.drosophila.jets`) as well
    as arrays."""
    (sp, cp), (st, ct), (se, ce) = phi, theta, eta
    span = (sp * ct, -cp * ct, st)
    chord = (-cp * ce + sp * st * se, -sp * ce - cp * st * se, -ct * se)
    return span, chord


def to_body(params: DrosophilaParams, vectors):
    """Vectors ``(2, K, 3)`` of each wing (right, left) from the stroke-plane frame to the body frame, the left
    wing's mirrored in y: one matrix product per wing (XLA evaluates its operand once, where elementwise
    code would be recomputed in every consumer)."""
    sb, cb = math.sin(params.stroke_plane_angle), math.cos(params.stroke_plane_angle)
    turn = np.array([[cb, 0.0, sb], [0.0, 1.0, 0.0], [-sb, 0.0, cb]], np.float32)
    return jnp.einsum("wkj,wij->wki", vectors, jnp.asarray(MIRROR[:, :, None] * turn))


class WingKinematics(NamedTuple):
    """Both wings at one instant, body frame: span and chord unit vectors ``e_s, e_c (2, 3)``, their rates
    ``de_s, de_c (2, 3)`` 1/s, and the rates of change ``da, db (2,)`` of ``a = ė_s·e_n`` and
    ``b = ė_c·e_n`` (``e_n = e_s × e_c``; ``b`` is the rotation rate about the span, 1/s²)."""

    e_s: jax.Array
    e_c: jax.Array
    de_s: jax.Array
    de_c: jax.Array
    da: jax.Array
    db: jax.Array


def kinematics(params: DrosophilaParams, angles_at: Callable, t) -> WingKinematics:
    """Wing kinematics at time ``t`` s from ``angles_at(t) -> (2, 3)`` rad, with exact time derivatives: the
    angles' first and second rates by forward-mode differentiation of their closed form (no finite
    differences), the frames' by the chain and product rules on jets (:mod:`animat.fly.drosophila.jets`:
    one sine and one cosine of each angle; differentiating through them would evaluate each several times)."""
    t = jnp.asarray(t, jnp.float32)
    one = jnp.ones_like(t)
    (a, a1), (_, a2) = jax.jvp(lambda time: jax.jvp(angles_at, (time,), (one,)), (t,), (one,))
    a, a1, a2 = once((a, a1, a2))
    span, chord = frames_of(*(sincos(Jet(a[:, i], a1[:, i], a2[:, i])) for i in range(3)))
    parts = [jnp.stack([getattr(x, part) for x in e], axis=-1) for e in (span, chord) for part in ("v", "d", "dd")]
    body = to_body(params, jnp.stack(parts, axis=1))  # (2, 6, 3)
    e_s, de_s, dde_s, e_c, de_c, dde_c = (body[:, k] for k in range(6))
    e_n = jnp.cross(e_s, e_c)
    de_n = jnp.cross(de_s, e_c) + jnp.cross(e_s, de_c)
    rate = lambda de, dde: dot3(dde, e_n) + dot3(de, de_n)  # d/dt (ė·e_n)
    return WingKinematics(*once((e_s, e_c, de_s, de_c, rate(de_s, dde_s), rate(de_c, dde_c))))


def station_forces(params: DrosophilaParams, kin: WingKinematics, vel, omega):
    """Air forces on every blade element as their components along the chord and the normal,
    ``along_chord, normal (2, N)`` N (the force is ``along_chord e_c + normal e_n``), and the normals
    ``e_n (2, 3)``.

    ``vel (3,)`` m/s: the body's velocity through still air, in the body frame; ``omega (3,)`` rad/s: its
    angular velocity. The air's velocity at the axis point ``r`` along the span,
    ``u = −(v + ω × (h + r e_s) + r ė_s)`` (``h`` the hinge), is affine in ``r``: its chordwise and normal
    parts are two numbers per wing and station, and no element needs a vector of its own."""
    r, c, area = (jnp.asarray(x, jnp.float32) for x in stations(params))  # (N,)
    hinge = jnp.asarray(params.hinge, jnp.float32) * MIRROR  # (2, 3)
    e_n = jnp.cross(kin.e_s, kin.e_c)
    u0 = -(vel + jnp.cross(omega, hinge))  # (2, 3): u = u0 + r u1
    u1 = -(jnp.cross(omega, kin.e_s) + kin.de_s)
    col = lambda x: x[:, None]  # (2,) -> (2, 1), across the stations
    u_c = col(dot3(u0, kin.e_c)) + r * col(dot3(u1, kin.e_c))  # (2, N)
    u_n = col(dot3(u0, e_n)) + r * col(dot3(u1, e_n))
    u_c, u_n = once((u_c, u_n))
    speed = jnp.sqrt(u_c * u_c + u_n * u_n + 1e-30)
    along_chord = normal = jnp.zeros_like(u_c)
    if params.translational:
        alpha, speed = once((trig.atan2_first_quadrant(jnp.abs(u_n), jnp.abs(u_c)), speed))
        side = jnp.sign(u_c * u_n)
        cl, cd = once((lift_coefficient(alpha), drag_coefficient(alpha)))
        q = 0.5 * params.rho * area * speed
        along_chord, normal = q * (cd * u_c - side * cl * u_n), q * (cd * u_n + side * cl * u_c)
    if params.rotational:
        x_hat = jnp.where(u_c >= 0, params.pitch_axis, 1.0 - params.pitch_axis)
        c_rot = math.pi * (0.75 - x_hat)
        omega_span = col(dot3(kin.de_c, e_n) + dot3(omega, kin.e_s))
        normal = normal - jnp.sign(u_c) * c_rot * params.rho * speed * c * area * omega_span
    if params.added_mass:
        mid = (0.5 - params.pitch_axis) * c
        a_n = r * col(kin.da) + mid * col(kin.db)
        normal = normal - params.rho * (math.pi / 4.0) * c * area * a_n
    return along_chord, normal, e_n


def wing_power(kin: WingKinematics, e_n, moment_chord, moment_normal):
    """The aerodynamic power ``()`` W of the wings' own motion (work done on the air per second; the body's
    motion is left out) from the first moments ``Σ r_i a_i, Σ r_i b_i (2,)`` N m of :func:`station_forces`'
    components: station ``r`` moves at ``r ė_s``."""
    return -jnp.sum(moment_chord * dot3(kin.de_s, kin.e_c) + moment_normal * dot3(kin.de_s, e_n))


def blade_forces(params: DrosophilaParams, kin: WingKinematics, vel, omega):
    """Air forces on every blade element, body frame (:func:`station_forces`' arguments): ``forces (2, N, 3)``
    N at ``points (2, N, 3)`` m (relative to the centre of mass) and the aerodynamic power ``()`` W."""
    along_chord, normal, e_n = station_forces(params, kin, vel, omega)
    r = jnp.asarray(stations(params)[0], jnp.float32)
    hinge = jnp.asarray(params.hinge, jnp.float32) * MIRROR
    forces = along_chord[..., None] * kin.e_c[:, None, :] + normal[..., None] * e_n[:, None, :]
    points = hinge[:, None, :] + r[None, :, None] * kin.e_s[:, None, :]
    return forces, points, wing_power(kin, e_n, (r * along_chord).sum(1), (r * normal).sum(1))


def air_loads(params: DrosophilaParams, kin: WingKinematics, vel, omega):
    """The blade forces' sum ``(3,)`` N and torque about the centre of mass ``(3,)`` N m (body frame), and the
    aerodynamic power ``()`` W (:func:`station_forces`' arguments). Per wing, ``Σ f_i = (Σ a_i) e_c + (Σ b_i) e_n``
    for the components ``a_i, b_i`` of :func:`station_forces`, and the torque ``h × Σ f_i + Σ r_i e_s × f_i``
    with ``e_s × e_c = e_n`` and ``e_s × e_n = −e_c``: the stations enter through the sums and first moments
    of ``a`` and ``b``, one matrix product (which XLA evaluates once, where four sums would each recompute the
    stations' forces)."""
    along_chord, normal, e_n = station_forces(params, kin, vel, omega)
    r = jnp.asarray(stations(params)[0], jnp.float32)
    moments = jnp.stack([along_chord, normal], axis=1) @ jnp.stack([jnp.ones_like(r), r], axis=1)  # (2, 2, 2)
    (total_c, moment_c), (total_n, moment_n) = (moments[:, k].T[:, :, None] for k in range(2))
    hinge = jnp.asarray(params.hinge, jnp.float32) * MIRROR
    force = total_c * kin.e_c + total_n * e_n  # (2, 3) per wing
    torque = jnp.cross(hinge, force) + moment_c * e_n - moment_n * kin.e_c
    return force.sum(0), torque.sum(0), wing_power(kin, e_n, moment_c[:, 0], moment_n[:, 0])
