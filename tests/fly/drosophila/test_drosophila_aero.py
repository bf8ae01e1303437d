"""The fruit fly's wing aerodynamics against closed forms, all in float32: lift, drag and power of a
sinusoidal stroke at a constant angle of attack, hover-like kinematics carrying the weight, what each
force term does, the wing geometry, mirror symmetry and the planform quadrature."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import quad

from animat.errors import ConfigError
from animat.fly.drosophila import aero, pattern
from animat.fly.drosophila.model import DrosophilaParams, beta_shape, chord, stations

P = DrosophilaParams()
DEG = math.pi / 180.0


def hover_pattern(f=218.0, amplitude=150.0, alpha_mid=45.0, lead=0.0):
    """Pattern parameters (11,) of both wings alike: the hover-like kinematics of the issue (218 Hz,
    150° stroke amplitude, 45° mid-stroke angle of attack, rotation centred on stroke reversal), after
    the hovering Drosophila of Fry, Sayaman & Dickinson (2003, Science 300, 495; 2005, J. Exp. Biol. 208,
    2303): f ≈ 218 Hz, stroke amplitude ≈ 150°, stroke plane near horizontal, body angle ≈ 45°."""
    wing = [amplitude * DEG, 0.0, 0.0, (90.0 - alpha_mid) * DEG, lead * DEG]
    return np.array([f] + wing + wing, np.float32)


def tethered(params, angles_at, ts):
    """Forces per wing ``(T, 2, 3)`` (body frame, summed over stations) and power ``(T,)`` W of wings moving
    as ``angles_at(t)`` on a body held at rest."""

    def one(t):
        kin = aero.kinematics(params, angles_at, t)
        f, _, power = aero.blade_forces(params, kin, jnp.zeros(3), jnp.zeros(3))
        return f.sum(1), power

    f, power = jax.jit(jax.vmap(one))(jnp.asarray(ts, jnp.float32))
    return np.asarray(f, np.float64), np.asarray(power, np.float64)


def stroke_plane_normal(params):
    """Body-frame unit normal (3,) of the stroke plane: the vertical in the hover posture."""
    b = params.stroke_plane_angle
    return np.array([math.sin(b), 0.0, math.cos(b)])


def pattern_angles(params, p):
    state = pattern.start(p)
    return lambda t: pattern.angles(state, params.rotation_sharpness, t)


def one_period(f, n=4000):
    return np.arange(n) / (n * f)


# ---------------------------------------------------------------------------------------------
# closed forms: sinusoidal stroke at a constant angle of attack, translational forces only


@pytest.mark.parametrize("alpha_deg", [15.0, 45.0, 70.0])
def test_constant_angle_of_attack_lift_and_power_match_the_closed_forms(alpha_deg):
    """φ = (Φ/2) sin 2πft with the wing flipped instantly at stroke reversal (η = α on the forward stroke,
    π − α on the back stroke), no deviation: per wing, mean lift ½ρ C_L(α) ⟨φ̇²⟩ ∫c r² dr and power
    (the drag's work) ½ρ C_D(α) ⟨|φ̇|³⟩ ∫c r³ dr, with
    ⟨φ̇²⟩ = (πfΦ)²/2, ⟨|φ̇|³⟩ = (πfΦ)³ 4/(3π), ∫c r² dr = S R² r̂2²,
    ∫c r³ dr = S R³ E[r̂³] (beta moments)."""
    params = P.with_(rotational=False, added_mass=False)
    f, amp, alpha = 218.0, 150.0 * DEG, alpha_deg * DEG

    def angles_at(t):
        w = 2 * math.pi * f * t
        stroke = 0.5 * amp * jnp.sin(w)
        eta = jnp.where(jnp.cos(w) >= 0, alpha, math.pi - alpha)
        row = jnp.stack([stroke, jnp.zeros_like(stroke), eta])
        return jnp.stack([row, row])

    ts = one_period(f)
    forces, power = tethered(params, angles_at, ts)
    up = stroke_plane_normal(params)
    lift = (forces @ up).mean(0)  # (2,) per wing

    _, p, q = beta_shape(params.r2_hat)
    S, R = params.wing_area, params.wing_length
    i2 = S * R**2 * params.r2_hat**2
    i3 = S * R**3 * p * (p + 1) * (p + 2) / ((p + q) * (p + q + 1) * (p + q + 2))
    w2, w3 = (math.pi * f * amp) ** 2 / 2, (math.pi * f * amp) ** 3 * 4 / (3 * math.pi)
    lift_cf = 0.5 * params.rho * float(aero.lift_coefficient(alpha)) * w2 * i2
    power_cf = 2 * 0.5 * params.rho * float(aero.drag_coefficient(alpha)) * w3 * i3
    print(f"alpha {alpha_deg}: lift/closed form {lift / lift_cf}, power {power.mean() / power_cf}")
    np.testing.assert_allclose(lift, lift_cf, rtol=0.02)
    np.testing.assert_allclose(power.mean(), power_cf, rtol=0.02)
    np.testing.assert_allclose((forces[:, 0, 1] + forces[:, 1, 1]).mean(), 0.0, atol=1e-4 * lift_cf)  # sideways cancels


def test_dickinson_coefficients_at_known_angles():
    """C_L peaks near 45° at 1.80, C_D rises from 0.39 at 0° to 1.70 at 45° and 3.46 at 90° (Dickinson et al. 1999,
    fig. 3)."""
    a = jnp.array([0.0, 45.0, 90.0]) * DEG
    np.testing.assert_allclose(np.asarray(aero.lift_coefficient(a)), [0.0272, 1.8045, 0.1011], atol=2e-3)
    np.testing.assert_allclose(np.asarray(aero.drag_coefficient(a)), [0.3927, 1.7037, 3.4609], atol=2e-3)


# ---------------------------------------------------------------------------------------------
# hover-like kinematics, all terms on


def test_hover_kinematics_carry_the_body_weight():
    """218 Hz, 150°, 45° mid-stroke angle of attack, symmetric rotation at reversal, stroke plane level
    (hover posture): mean vertical force 0.8–1.6 × weight, horizontal and sideways means ~0, and the
    aerodynamic power per body mass of the same order as Sun & Tang's (2002) 29 W/kg (CFD)."""
    p = hover_pattern()
    forces, power = tethered(P, pattern_angles(P, p), one_period(218.0))
    total = forces.sum(1).mean(0)
    ratio = float(total @ stroke_plane_normal(P)) / P.weight
    forward = np.array([math.cos(P.stroke_plane_angle), 0.0, -math.sin(P.stroke_plane_angle)])
    print(f"hover kinematics: vertical force / weight {ratio:.3f}, power {power.mean() / P.mass:.1f} W/kg")
    assert 0.8 < ratio < 1.6
    assert abs(total @ forward) < 0.05 * P.weight and abs(total[1]) < 1e-4 * P.weight
    assert 10.0 < power.mean() / P.mass < 90.0


def test_each_force_term_switches_off_and_rotation_timing_matters():
    """Translational lift dominates; with symmetric rotation the rotational force averages out; advanced
    rotation adds lift through it and delayed rotation takes it away (Dickinson et al. 1999)."""
    up = stroke_plane_normal(P)
    ts = one_period(218.0, 1000)

    def vertical(params, lead=0.0):
        forces, _ = tethered(params, pattern_angles(params, hover_pattern(lead=lead)), ts)
        return float(forces.sum(1).mean(0) @ up) / params.weight

    only = lambda **on: P.with_(**{k: on.get(k, False) for k in ("translational", "rotational", "added_mass")})
    trans, rot, added = (
        vertical(only(translational=True)),
        vertical(only(rotational=True)),
        vertical(only(added_mass=True)),
    )
    print(
        f"translational {trans:.3f}, rotational {rot:.4f}, added mass {added:.3f}, sum {trans + rot + added:.3f}, "
        f"all {vertical(P):.3f}"
    )
    assert trans > 0.8 and abs(rot) < 0.02 and abs(added) < 0.2
    np.testing.assert_allclose(trans + rot + added, vertical(P), rtol=1e-4)  # the terms add
    assert vertical(only(), 0.0) == 0.0
    advanced, delayed = vertical(only(rotational=True), 20.0), vertical(only(rotational=True), -20.0)
    print(f"rotational lift: advanced {advanced:.3f}, delayed {delayed:.3f}")
    assert advanced > 0.05 and delayed < -0.05


def test_left_and_right_wings_are_mirror_images():
    """Both wings alike, body at rest: the sideways force and the roll and yaw torques cancel."""
    state = pattern.start(hover_pattern(lead=10.0))
    angles_at = lambda t: pattern.angles(state, P.rotation_sharpness, t)

    def one(t):
        f, pts, _ = aero.blade_forces(P, aero.kinematics(P, angles_at, t), jnp.zeros(3), jnp.zeros(3))
        return f.sum((0, 1)), jnp.cross(pts, f).sum((0, 1)), f[0].sum(0), f[1].sum(0)

    force, torque, right, left = (
        np.asarray(x) for x in jax.jit(jax.vmap(one))(jnp.asarray(one_period(218.0, 200), jnp.float32))
    )
    scale = np.abs(right).max()
    np.testing.assert_allclose(right[:, [0, 2]], left[:, [0, 2]], atol=1e-6 * scale)
    np.testing.assert_allclose(right[:, 1], -left[:, 1], atol=1e-6 * scale)
    np.testing.assert_allclose(force[:, 1], 0.0, atol=1e-6 * scale)
    np.testing.assert_allclose(torque[:, [0, 2]], 0.0, atol=1e-6 * scale * P.wing_length)


# ---------------------------------------------------------------------------------------------
# geometry and planform


def test_wing_frames_are_orthonormal_and_point_where_the_angles_say():
    rng = np.random.default_rng(0)
    angles = jnp.asarray(rng.uniform(-1.5, 1.5, (50, 2, 3)), jnp.float32)
    e_s, e_c = jax.vmap(lambda a: aero.wing_frames(P, a))(angles)
    e_s, e_c = np.asarray(e_s), np.asarray(e_c)
    np.testing.assert_allclose(np.linalg.norm(e_s, axis=-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(e_c, axis=-1), 1.0, atol=1e-6)
    np.testing.assert_allclose((e_s * e_c).sum(-1), 0.0, atol=1e-6)
    # stroke plane level (hover posture: body x at +45°): at zero angles the right span points right (−y),
    # the chord backwards in the stroke plane; φ > 0 swings the tip forward, θ > 0 lifts it
    s, c = aero.wing_frames(P, jnp.array([[0.0, 0.0, 0.0], [0.3, 0.2, 0.5]]))
    b = P.stroke_plane_angle
    np.testing.assert_allclose(np.asarray(s[0]), [0.0, -1.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(np.asarray(c[0]), [-math.cos(b), 0.0, math.sin(b)], atol=1e-7)
    forward = np.array([math.cos(b), 0.0, -math.sin(b)])
    assert (
        float(s[1] @ forward) > 0 and float(s[1] @ stroke_plane_normal(P)) > 0 and float(s[1][1]) > 0
    )  # left wing: +y


def test_kinematics_rates_match_finite_differences():
    state = pattern.start(
        hover_pattern(lead=10.0) * np.r_[1, [1, 1, 0, 1, 1] * 2] + np.r_[0, [0, 0.1, 0.2, 0, 0] * 2].astype(np.float32)
    )
    angles_at = lambda t: pattern.angles(state, P.rotation_sharpness, t)
    t, h = 1.3e-3, 1e-6
    kin = aero.kinematics(P, angles_at, t)
    frames = lambda x: aero.wing_frames(P, angles_at(jnp.float32(x)))
    (s1, c1), (s0, c0) = frames(t + h), frames(t - h)
    scale = np.abs(np.asarray(kin.de_s)).max()
    np.testing.assert_allclose(np.asarray(kin.de_s), (np.asarray(s1) - np.asarray(s0)) / (2 * h), atol=2e-2 * scale)
    np.testing.assert_allclose(np.asarray(kin.de_c), (np.asarray(c1) - np.asarray(c0)) / (2 * h), atol=2e-2 * scale)


def test_planform_quadrature_is_exact_for_area_and_moments():
    """The Gauss–Jacobi stations reproduce the beta planform's area and second moment (S R² r̂2²) exactly,
    and the chord function integrates to the area."""
    r, c, area = stations(P)
    S, R = P.wing_area, P.wing_length
    np.testing.assert_allclose(area.sum(), S, rtol=1e-12)
    np.testing.assert_allclose((area * r**2).sum(), S * R**2 * P.r2_hat**2, rtol=1e-12)
    integral = lambda g: quad(lambda x: float(chord(P, x)) * g(x), 0, R, epsabs=0.0, epsrel=1e-10, limit=200)[0]
    np.testing.assert_allclose(integral(lambda x: 1.0), S, rtol=1e-6)
    np.testing.assert_allclose(integral(lambda x: x * x), S * R**2 * P.r2_hat**2, rtol=1e-6)
    r1, _, _ = beta_shape(P.r2_hat)
    np.testing.assert_allclose((area * r).sum(), S * R * r1, rtol=1e-12)
    assert 0.8e-3 < c.max() < 1.2e-3 and np.all(np.diff(r) > 0) and 0 < r[0] and r[-1] < R


@pytest.mark.parametrize(
    "bad",
    [
        dict(dt=2e-4),
        dict(sample_dt=5.05e-3),
        dict(control_dt=-5e-3),
        dict(control_dt=5.05e-3),
        dict(thorax_resonance_hz=-1.0),
        dict(induced_power_factor=-1.0),
        dict(mass=0.0),
        dict(rho=-1.0),
        dict(r2_hat=0.9),
        dict(pitch_axis=1.5),
        dict(n_stations=0),
    ],
)
def test_bad_parameters_are_config_errors(bad):
    with pytest.raises(ConfigError):
        P.with_(**bad)
