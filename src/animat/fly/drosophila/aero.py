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
    phi, theta, eta = angles[:, 0], angles[:, 1], angles[:, 2]
    sp, cp, st, ct, se, ce = jnp.sin(phi), jnp.cos(phi), jnp.sin(theta), jnp.cos(theta), jnp.sin(eta), jnp.cos(eta)
    span = jnp.stack([sp * ct, -cp * ct, st], axis=-1)
    chord = jnp.stack([-cp * ce + sp * st * se, -sp * ce - cp * st * se, -ct * se], axis=-1)
    sb, cb = math.sin(params.stroke_plane_angle), math.cos(params.stroke_plane_angle)
    to_body = lambda v: (
        jnp.stack([cb * v[:, 0] + sb * v[:, 2], v[:, 1], -sb * v[:, 0] + cb * v[:, 2]], axis=-1) * MIRROR
    )
    return to_body(span), to_body(chord)


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
