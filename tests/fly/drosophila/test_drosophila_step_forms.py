"""The fruit fly's step in the forms issue 50 gave it for speed, each against the plain form it replaces:
the wing frames' rates by jets against differentiating the frames themselves twice, the angle of attack's
polynomial arctangent against NumPy's, and the blade forces' sums and torque from the stations' two force
components against summing every element's force vector. About 5 s together (compiling)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from animat.fly.drosophila import aero, pattern, trig
from animat.fly.drosophila.model import DrosophilaParams

P = DrosophilaParams()


def random_patterns(n: int, seed: int):
    """``n`` pattern generator states between two random patterns (:func:`pattern.from_outputs`)."""
    rng = np.random.default_rng(seed)
    p = pattern.from_outputs(jnp.asarray(rng.uniform(-1, 1, (n, 2, 11)), jnp.float32))
    return pattern.PatternState(
        psi0=jnp.asarray(rng.uniform(0, 2 * np.pi, n), jnp.float32),
        p_from=p[:, 0],
        p_to=p[:, 1],
        k=jnp.zeros(n, jnp.int32),
    )


def plain_kinematics(angles_at, t):
    """The frames and the rates of ``a = ė_s·e_n``, ``b = ė_c·e_n`` by differentiating ``wing_frames`` twice."""

    def first(time):
        (e_s, e_c), (de_s, de_c) = jax.jvp(lambda x: aero.wing_frames(P, angles_at(x)), (time,), (1.0,))
        e_n = jnp.cross(e_s, e_c)
        return (e_s, e_c, de_s, de_c), ((de_s * e_n).sum(-1), (de_c * e_n).sum(-1))

    (vecs, _), (_, (da, db)) = jax.jvp(first, (t,), (1.0,))
    return aero.WingKinematics(*vecs, da, db)


def test_the_frames_rates_by_jets_are_the_frames_derivatives():
    """At 64 random patterns and times within their beats, every field of :func:`aero.kinematics` equals
    the plain double differentiation to float32 rounding (1e-5 of each field's largest size; the second
    rates reach 1e8 /s²)."""
    states = random_patterns(64, seed=0)
    periods = jax.vmap(pattern.beat_period)(states)
    ts = jnp.asarray(np.random.default_rng(1).uniform(0, 1, 64), jnp.float32) * periods

    def both(state, t):
        angles_at = lambda x: pattern.angles(state, P.rotation_sharpness, x)
        return aero.kinematics(P, angles_at, t), plain_kinematics(angles_at, t)

    fast, plain = jax.jit(jax.vmap(both))(states, ts)
    for name, got, want in zip(fast._fields, fast, plain, strict=True):
        scale = float(np.abs(np.asarray(want)).max())
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5 * scale, err_msg=name)


def test_the_polynomial_arctangent_is_numpys_to_float32_rounding():
    """Over a grid of the first quadrant (both arguments from 0 to 10, zeros included), within 2e-7 rad of
    NumPy's float64 ``arctan2``, and 0 where both arguments are 0."""
    v = np.concatenate([[0.0], np.geomspace(1e-6, 10.0, 400)]).astype(np.float32)
    y, x = np.meshgrid(v, v)
    got = np.asarray(jax.jit(trig.atan2_first_quadrant)(y, x), np.float64)
    np.testing.assert_allclose(got, np.arctan2(y.astype(np.float64), x.astype(np.float64)), rtol=0, atol=2e-7)
    assert got[0, 0] == 0.0


def test_the_loads_from_the_stations_components_are_the_sums_of_the_element_forces():
    """:func:`aero.air_loads` (the force, torque and power from the stations' chordwise and normal force
    sums) against :func:`aero.blade_forces`' element vectors summed (force, ``Σ points × forces``, its power),
    with the body moving and turning: to 1e-5 of each figure's size."""
    states = random_patterns(32, seed=2)
    rng = np.random.default_rng(3)
    vel = jnp.asarray(rng.uniform(-0.5, 0.5, (32, 3)), jnp.float32)
    omega = jnp.asarray(rng.uniform(-50, 50, (32, 3)), jnp.float32)

    def both(state, v, w):
        kin = aero.kinematics(P, lambda x: pattern.angles(state, P.rotation_sharpness, x), jnp.float32(1e-3))
        forces, points, power = aero.blade_forces(P, kin, v, w)
        summed = (forces.sum((0, 1)), jnp.cross(points, forces).sum((0, 1)), power)
        return aero.air_loads(P, kin, v, w), summed

    fast, summed = jax.jit(jax.vmap(both))(states, vel, omega)
    for name, got, want in zip(("force", "torque", "power"), fast, summed, strict=True):
        scale = float(np.abs(np.asarray(want)).max())
        assert scale > 0, name
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), atol=1e-5 * scale, err_msg=name)
