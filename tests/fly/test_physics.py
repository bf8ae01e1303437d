"""Fly physics against closed forms: free fall, terminal velocity, torque signs, wing lift, dt
independence, wing limits, rotations and parameter validation.

Loops over thousands of physics steps run as one jitted ``lax.scan``.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat.errors import ConfigError
from animat.fly.kinematics import feathering_stroke, servo
from animat.fly.model import FlyParams, wing_elements
from animat.fly.physics import body_step, initial_state, step, wing_forces
from animat.rotations import euler_xyz, integrate_quat, quat_exp, quat_mul, quat_to_mat, rot_x, rot_y, rot_z

P = FlyParams()
WEIGHT = P.mass * P.gravity


# ---------------------------------------------------------------------------------------------
# helpers


@functools.partial(jax.jit, static_argnums=(0, 2))
def _still_wings(params, state, n):
    """``n`` steps with the wings held where they are; returns (final state, vel history (n, 3))."""

    def body(s, _):
        s = step(params, s, s.wing)
        return s, s.vel

    return jax.lax.scan(body, state, None, length=n)


def _tethered_forces(params, angles, rates):
    """Net force (T, 3) (world) and torque about the centre of mass (T, 3) (body) of both wings moving
    symmetrically at ``angles, rates (T, 3)`` on a body held at rest, level."""
    state = initial_state()

    def one(a, r):
        f, pts = wing_forces(params, state, jnp.stack([a, a]), jnp.stack([r, r]))
        return f.sum(0), jnp.cross(pts, f).sum(0)  # level body: world frame == body frame

    return jax.jit(jax.vmap(one))(jnp.asarray(angles), jnp.asarray(rates))


def _stroke_mean_force(params, dt, periods=10):
    """Mean wing force over whole periods of the default feathering stroke sampled every ``dt`` s."""
    _, _, period = feathering_stroke(params, np.zeros(1))
    n = int(round(periods * period / dt))
    angles, rates, _ = feathering_stroke(params, np.arange(n) * dt)
    f, tau = _tethered_forces(params, angles, rates)
    return np.asarray(f, np.float64).mean(0), np.asarray(f), np.asarray(tau)


# ---------------------------------------------------------------------------------------------
# 1. free fall


def test_free_fall_in_vacuum_is_exact():
    params = P.with_(rho=0.0)
    wing = np.array([[0.5, 0.2, -0.1], [0.5, 0.2, -0.1]], np.float32)  # still, not at zero
    s0 = initial_state(pos=(1.0, -2.0, 3.0), wing=wing)
    n = 1000
    s, _ = _still_wings(params, s0, n)
    t = n * params.dt
    z_expected = 3.0 - 0.5 * params.gravity * t * t
    err = abs(float(s.pos[2]) - z_expected)
    print(f"free fall 1 s: z={float(s.pos[2]):.7f} expected {z_expected:.7f} |err|={err:.2e}")
    assert err < 2e-5 * 0.5 * params.gravity * t * t
    np.testing.assert_allclose(np.asarray(s.pos[:2]), [1.0, -2.0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(s.vel), [0.0, 0.0, -params.gravity * t], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(s.quat), [1.0, 0.0, 0.0, 0.0], atol=1e-7)
    np.testing.assert_allclose(np.asarray(s.omega), 0.0, atol=1e-7)
    np.testing.assert_allclose(np.asarray(s.wing), wing, atol=1e-7)
    assert not bool(s.crashed)


# ---------------------------------------------------------------------------------------------
# 2. terminal velocity under body drag only


def _expected_area(params, quat):
    """Body area across a vertical flow: Σ face_i |d_i| with d the world vertical in the body frame."""
    a, b, c = params.body_size
    faces = np.array([b * c, a * c, a * b])
    R = np.asarray(quat_to_mat(jnp.asarray(quat, jnp.float32)), np.float64)
    d = R.T @ np.array([0.0, 0.0, 1.0])
    return float(np.sum(faces * np.abs(d)))


@pytest.mark.parametrize(
    "rotvec, area",
    [
        ((0.0, 0.0, 0.0), 2.0 * 4.0),  # level: the 2 × 4 face falls flat
        ((math.pi / 2, 0.0, 0.0), 2.0 * 1.0),  # nose down (90° about x): the 2 × 1 face leads
        ((0.3, -0.5, 0.7), None),  # tilted: projected area of three faces
    ],
)
def test_terminal_velocity_of_body_drag(rotvec, area):
    params = P.with_(cd_wing=0.0)
    quat = quat_exp(jnp.asarray(rotvec, jnp.float32))
    expected_area = _expected_area(params, quat)
    if area is not None:
        assert expected_area == pytest.approx(area, rel=1e-5)
    v_t = math.sqrt(2 * params.mass * params.gravity / (params.rho * params.cd_body * expected_area))
    s0 = initial_state()._replace(quat=quat)
    n = int(round(12 * v_t / params.gravity / params.dt))  # 12 time constants
    s, vel = _still_wings(params, s0, n)
    vz = float(s.vel[2])
    print(f"terminal velocity, area {expected_area:.3f}: measured {vz:.4f}, expected {-v_t:.4f}")
    assert vz == pytest.approx(-v_t, rel=0.01)
    np.testing.assert_allclose(np.asarray(s.vel[:2]), 0.0, atol=1e-3 * v_t)
    np.testing.assert_allclose(np.asarray(s.quat), np.asarray(quat), atol=1e-6)  # drag exerts no torque
    # the whole approach: quadratic drag from rest gives v(t) = −v_t tanh(g t / v_t)
    t = (np.arange(n) + 1) * params.dt
    closed = -v_t * np.tanh(params.gravity * t / v_t)
    assert np.max(np.abs(np.asarray(vel[:, 2]) - closed)) < 0.01 * v_t


# ---------------------------------------------------------------------------------------------
# 3. torque signs and magnitudes


@pytest.mark.parametrize(
    "point, axis, sign",
    [
        ((0.0, 1.0, 0.0), 0, +1),  # push up ahead of the centre of mass: nose up (+x rotation)
        ((0.0, -1.0, 0.0), 0, -1),  # push up behind: nose down
        ((1.0, 0.0, 0.0), 1, -1),  # push up on the right: roll left (−y rotation)
        ((-1.0, 0.0, 0.0), 1, +1),
    ],
)
def test_off_centre_push_rotates_the_right_way(point, axis, sign):
    params = P.with_(rho=0.0)
    F = 3.0
    s = body_step(params, initial_state(), jnp.array([[0.0, 0.0, F]]), jnp.array([point], jnp.float32))
    inertia = params.inertia()
    omega = np.asarray(s.omega)
    expected = sign * F * 1.0 / inertia[axis] * params.dt  # |r × F| = F · 1
    assert np.sign(omega[axis]) == sign
    assert omega[axis] == pytest.approx(expected, rel=1e-5)
    others = [i for i in range(3) if i != axis]
    np.testing.assert_allclose(omega[others], 0.0, atol=1e-9)
    # the same push moves the centre of mass as a force through it would
    np.testing.assert_allclose(np.asarray(s.vel), [0.0, 0.0, (F / params.mass - params.gravity) * params.dt], rtol=1e-5)
    # and the orientation turns about the same axis (rotation about +x lifts the nose +y to +z)
    R = np.asarray(quat_to_mat(s.quat))
    if axis == 0:
        assert np.sign(R[2, 1]) == sign  # body +y now has a world +z component when nose-up
    else:
        assert np.sign(R[2, 0]) == -sign  # rotation about −y lifts body +x


def test_torque_of_a_world_force_on_a_turned_body():
    """World forces are turned into the body frame before r × F: yawed by 90°, a world +x push at
    body point (1, 0, 0) is a body −y push there, torque (0, 0, −F) about body z."""
    params = P.with_(rho=0.0)
    q = quat_exp(jnp.array([0.0, 0.0, math.pi / 2], jnp.float32))
    s0 = initial_state()._replace(quat=q)
    F = 2.0
    s = body_step(params, s0, jnp.array([[F, 0.0, 0.0]]), jnp.array([[1.0, 0.0, 0.0]]))
    inertia = params.inertia()
    np.testing.assert_allclose(np.asarray(s.omega), [0.0, 0.0, -F / inertia[2] * params.dt], rtol=1e-5, atol=1e-9)


def test_inertia_is_the_solid_cuboid():
    a, b, c = P.body_size
    np.testing.assert_allclose(P.inertia(), P.mass / 12 * np.array([b * b + c * c, a * a + c * c, a * a + b * b]))
    assert P.inertia()[0] == pytest.approx(5.0 * 17 / 12)


# ---------------------------------------------------------------------------------------------
# 5. tethered wing strokes


def test_wing_quadrature_covers_the_wing():
    for n in (1, 2, 3, 4):
        pts, area = wing_elements(P.with_(wing_elements=n))
        assert area.sum() == pytest.approx(0.5 * P.wing_span * P.wing_chord, rel=1e-6)
        assert len(pts) == 3 * n * (n + 1) // 2
        # the centroid of the triangle is (span/3, −chord/3)
        np.testing.assert_allclose(
            (pts * area[:, None]).sum(0) / area.sum(), [P.wing_span / 3, -P.wing_chord / 3, 0.0], atol=1e-5
        )


def test_feathering_stroke_lifts():
    mean, f, tau = _stroke_mean_force(P, 1e-3)
    ratio = mean[2] / WEIGHT
    print(f"feathering stroke: mean force {mean} = {ratio:.3f} × weight in z")
    assert ratio >= 1.2
    # left–right mirror symmetry: no sideways force, no roll or yaw torque at any instant
    assert np.max(np.abs(f[:, 0])) < 1e-4 * np.max(np.abs(f[:, 2]))
    assert np.max(np.abs(tau[:, 1:])) < 1e-4 * np.max(np.abs(tau[:, 0])) + 1e-4


def test_symmetric_stroke_gives_no_mean_lift():
    params = P.with_(angle_limits=(math.pi / 3, 0.0, 0.2))  # no feathering
    v = params.speed_limits[0]
    _, _, period = feathering_stroke(params, np.zeros(1), down_speed=v, up_speed=v)
    dt = 1e-3
    n = int(round(10 * period / dt))
    angles, rates, _ = feathering_stroke(params, (np.arange(n) + 0.5) * dt, down_speed=v, up_speed=v)
    assert np.all(angles[:, 1] == 0.0)
    f, _ = _tethered_forces(params, angles, rates)
    f = np.asarray(f, np.float64)
    print(
        f"symmetric stroke: mean Fz {f[:, 2].mean():.4f} ({f[:, 2].mean() / WEIGHT:.4f} × weight), peak "
        f"{np.abs(f[:, 2]).max():.2f}"
    )
    assert np.abs(f[:, 2]).max() > WEIGHT  # each half-stroke pushes hard ...
    assert abs(f[:, 2].mean()) < 0.05 * WEIGHT  # ... but the two halves cancel


def test_still_wings_in_still_air_give_no_force():
    angles = np.array([[0.7, 0.3, -0.2]], np.float32)
    f, tau = _tethered_forces(P, angles, np.zeros_like(angles))
    np.testing.assert_allclose(np.asarray(f), 0.0, atol=0.0)


# ---------------------------------------------------------------------------------------------
# 6. the same continuous wing motion gives the same force whatever dt


def test_tethered_stroke_force_is_independent_of_dt():
    means = [_stroke_mean_force(P, dt)[0][2] for dt in (1e-3, 5e-4, 2.5e-4)]
    changes = [abs(means[i + 1] - means[i]) / abs(means[i]) for i in range(2)]
    print(f"tethered stroke mean Fz at dt 1, 0.5, 0.25 ms: {means}; relative changes {changes}")
    assert max(changes) < 0.05


SWITCH = 0.1  # s: flap down for 0.1 s (flat), then up for 0.1 s (feathered)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _servo_schedule_forces(params, n):
    """Servo the wings on a time-based schedule for ``n`` steps (tethered body); per-step net wing force."""
    lim = np.asarray(params.angle_limits, np.float32)
    per_phase = int(round(SWITCH / params.dt))
    down = jnp.array([-lim[0], 0.0, 0.0])
    up = jnp.array([lim[0], lim[1], 0.0])
    state = initial_state(wing=np.array([[lim[0], 0.0, 0.0]] * 2, np.float32))

    def body(wing, i):
        target = jnp.where((i // per_phase) % 2 == 0, down, up)
        rates, new = servo(params, wing, jnp.stack([target, target]))
        f, _ = wing_forces(params, state, wing, rates)
        return new, f.sum(0)

    return jax.lax.scan(body, state.wing, jnp.arange(n))[1]


@functools.partial(jax.jit, static_argnums=(0, 1))
def _free_flight_schedule(params, n):
    """Closed loop through ``step``: the free body flies the same schedule; final state."""
    lim = np.asarray(params.angle_limits, np.float32)
    per_phase = int(round(SWITCH / params.dt))
    down = jnp.array([-lim[0], 0.0, 0.0])
    up = jnp.array([lim[0], lim[1], 0.0])
    state = initial_state(wing=np.array([[lim[0], 0.0, 0.0]] * 2, np.float32))

    def body(s, i):
        target = jnp.where((i // per_phase) % 2 == 0, down, up)
        return step(params, s, jnp.stack([target, target])), None

    return jax.lax.scan(body, state, jnp.arange(n))[0]


def test_servo_driven_force_is_independent_of_dt():
    """The original's wing speed was a finite difference of jumps, so its thrust grew as 1/dt.
    Driving the servo with the same targets at the same times must give the same mean force."""
    mean_z, mean_abs = [], []
    for dt in (1e-3, 5e-4, 2.5e-4):
        f = np.asarray(_servo_schedule_forces(P.with_(dt=dt), int(round(1.0 / dt))), np.float64)
        mean_z.append(f[:, 2].mean())
        mean_abs.append(np.abs(f[:, 2]).mean())
    ch_z = [abs(mean_z[i + 1] - mean_z[i]) / abs(mean_z[i]) for i in range(2)]
    ch_abs = [abs(mean_abs[i + 1] - mean_abs[i]) / mean_abs[i] for i in range(2)]
    print(f"servo schedule mean Fz {mean_z} (changes {ch_z}); mean |Fz| {mean_abs} (changes {ch_abs})")
    assert mean_z[0] > 0.05 * WEIGHT  # the feathered upstroke leaves a net upward force
    assert max(ch_z) < 0.05
    assert max(ch_abs) < 0.05


def test_free_flight_is_independent_of_dt():
    """Closed loop through ``step`` (free body): after 0.6 s of the schedule, the velocity gained by
    flapping is the same at dt = 1, 0.5 and 0.25 ms."""
    t = 0.6
    gains = []
    for dt in (1e-3, 5e-4, 2.5e-4):
        s = _free_flight_schedule(P.with_(dt=dt), int(round(t / dt)))
        assert not bool(s.crashed)
        gains.append(np.asarray(s.vel, np.float64) - np.array([0.0, 0.0, -P.gravity * t]))
    ch = [np.linalg.norm(gains[i + 1] - gains[i]) / np.linalg.norm(gains[i]) for i in range(2)]
    print(f"free flight velocity gained by flapping at dt 1, 0.5, 0.25 ms: {gains}; changes {ch}")
    assert max(ch) < 0.05


# ---------------------------------------------------------------------------------------------
# 8. wing limits


@pytest.mark.parametrize("dt", [1e-3, 2.5e-4])
def test_wing_angle_and_speed_limits_hold(dt):
    params = P.with_(dt=dt)
    n = int(round(2.0 / dt))
    key = jax.random.PRNGKey(3)
    # random wild targets: a new one every step, and slow ones held for 50 steps
    fast = jax.random.uniform(key, (n, 2, 3), minval=-10.0, maxval=10.0)
    slow = jnp.repeat(
        jax.random.uniform(jax.random.fold_in(key, 1), (n // 50 + 1, 2, 3), minval=-10.0, maxval=10.0), 50, 0
    )[:n]
    targets = jnp.where((jnp.arange(n) < n // 2)[:, None, None], fast, slow)

    @jax.jit
    def run(targets):
        def body(s, tgt):
            s = step(params, s, tgt)
            return s, s.wing

        return jax.lax.scan(body, initial_state(), targets)

    s, wings = run(targets)
    wings = np.concatenate([np.zeros((1, 2, 3), np.float32), np.asarray(wings)], 0).astype(np.float64)
    lim = np.asarray(params.angle_limits)
    vmax = np.asarray(params.speed_limits)
    assert np.all(np.abs(wings) <= lim + 1e-6)
    speed = np.abs(np.diff(wings, axis=0)) / dt
    assert np.all(speed <= vmax * (1 + 1e-4) + 1e-6 / dt)
    # the limits are reached, not just respected: the wings hit the stops and move at full speed
    assert np.all(np.abs(wings).max(axis=(0, 1)) >= lim - 1e-6)
    assert np.all(speed.max(axis=(0, 1)) >= 0.99 * vmax)
    print(
        f"dt {dt}: crashed {bool(s.crashed)}, max |angle| {np.abs(wings).max(axis=(0, 1))}, max speed "
        f"{speed.max(axis=(0, 1))}"
    )


def test_servo_rates_match_the_motion():
    key = jax.random.PRNGKey(5)
    lim = jnp.asarray(P.angle_limits)
    angles = jax.random.uniform(key, (1000, 3), minval=-1.0, maxval=1.0) * lim
    target = jax.random.uniform(jax.random.fold_in(key, 1), (1000, 3), minval=-10.0, maxval=10.0)
    rates, new = servo(P, angles, target)
    np.testing.assert_allclose(np.asarray(new), np.asarray(angles + rates * P.dt), atol=1e-6)
    assert np.all(np.abs(np.asarray(rates)) <= np.asarray(P.speed_limits) * (1 + 1e-6))
    # a target within reach is reached exactly
    near = angles + 0.5 * P.dt * jnp.asarray(P.speed_limits)
    near = jnp.clip(near, -lim, lim)
    np.testing.assert_allclose(np.asarray(servo(P, angles, near)[1]), np.asarray(near), atol=1e-6)


# ---------------------------------------------------------------------------------------------
# rotations


def _rodrigues(axis, angle):
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    K = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


@pytest.mark.parametrize("omega", [(2.0, 0.0, 0.0), (0.0, -3.0, 0.0), (0.0, 0.0, 1.5), (1.0, -2.0, 0.5)])
def test_integrate_quat_constant_omega_is_the_closed_form_rotation(omega):
    dt, n = 1e-3, 2000
    q0 = quat_exp(jnp.array([0.2, 0.1, -0.3], jnp.float32))

    def body(q, _):
        return integrate_quat(q, jnp.asarray(omega, jnp.float32), dt), None

    q = jax.jit(lambda q0: jax.lax.scan(body, q0, None, length=n)[0])(q0)
    w = np.asarray(omega, np.float64)
    angle = np.linalg.norm(w) * n * dt
    expected = np.asarray(quat_to_mat(q0), np.float64) @ _rodrigues(w, angle)  # body-frame omega: R0 · R(ω t)
    np.testing.assert_allclose(np.asarray(quat_to_mat(q)), expected, atol=2e-5)
    assert float(jnp.linalg.norm(q)) == pytest.approx(1.0, abs=1e-6)


def test_quat_exp_and_axis_rotations_agree():
    for a in (0.0, 1e-6, 0.3, -1.2, 3.0):
        np.testing.assert_allclose(
            np.asarray(quat_to_mat(quat_exp(jnp.array([a, 0.0, 0.0])))), np.asarray(rot_x(jnp.float32(a))), atol=1e-6
        )
        np.testing.assert_allclose(
            np.asarray(quat_to_mat(quat_exp(jnp.array([0.0, a, 0.0])))), np.asarray(rot_y(jnp.float32(a))), atol=1e-6
        )
        np.testing.assert_allclose(
            np.asarray(quat_to_mat(quat_exp(jnp.array([0.0, 0.0, a])))), np.asarray(rot_z(jnp.float32(a))), atol=1e-6
        )
    # rotation about +x maps +y to +z
    np.testing.assert_allclose(np.asarray(rot_x(jnp.float32(math.pi / 2))) @ np.array([0, 1, 0]), [0, 0, 1], atol=1e-6)
    # the small-angle branch: value right at (and next to) zero
    np.testing.assert_allclose(np.asarray(quat_exp(jnp.zeros(3))), [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(np.asarray(quat_exp(jnp.array([2e-5, 0.0, 0.0]))), [1.0, 1e-5, 0.0, 0.0], rtol=1e-6)


def test_quat_exp_gradient_is_finite_at_zero():
    g = jax.grad(lambda v: quat_exp(v)[1])(jnp.zeros(3))
    np.testing.assert_allclose(np.asarray(g), [0.5, 0.0, 0.0], atol=1e-6)
    # and so through the physics: a body that does not rotate (vacuum, still wings)
    params = P.with_(rho=0.0)

    def z_after(v0):
        s = initial_state()._replace(vel=v0)
        for _ in range(3):
            s = step(params, s, s.wing)
        return s.pos[2]

    g = jax.grad(z_after)(jnp.ones(3))
    np.testing.assert_allclose(np.asarray(g), [0.0, 0.0, 3 * params.dt], rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("angles", [(0.3, -0.4, 1.1), (-1.0, 0.2, -2.5), (0.0, 0.0, 0.0), (2.0, 1.2, 0.1)])
def test_euler_xyz_of_a_known_rotation(angles):
    ax, ay, az = angles
    qx = quat_exp(jnp.array([ax, 0.0, 0.0]))
    qy = quat_exp(jnp.array([0.0, ay, 0.0]))
    qz = quat_exp(jnp.array([0.0, 0.0, az]))
    q = quat_mul(qz, quat_mul(qy, qx))  # R = Rz(az) Ry(ay) Rx(ax): ZYX
    R = np.asarray(rot_z(jnp.float32(az)) @ rot_y(jnp.float32(ay)) @ rot_x(jnp.float32(ax)))
    np.testing.assert_allclose(np.asarray(quat_to_mat(q)), R, atol=1e-6)
    np.testing.assert_allclose(np.asarray(euler_xyz(q)), angles, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# parameters


def test_fly_params_validation():
    with pytest.raises(ConfigError):
        FlyParams(dt=0.001, control_dt=0.0015)
    with pytest.raises(ConfigError):
        FlyParams(dt=-0.001)
    with pytest.raises(ConfigError):
        FlyParams(dt=0.0)
    with pytest.raises(ConfigError):
        FlyParams(dt=0.01, control_dt=0.001)  # control faster than physics
    with pytest.raises(ConfigError):
        P.with_(mass=0.0)
    with pytest.raises(ConfigError):
        P.with_(rho=-1.0)
    with pytest.raises(ConfigError):
        FlyParams.from_dict({"dt": 0.001, "wingspan": 3.0})
    # the [fly] table of a config file: one-line errors, not tracebacks from the arithmetic
    for bad, words in (
        ({"wing_elements": 0}, "wing_elements must be an integer >= 1"),
        ({"wing_elements": 2.5}, "wing_elements must be an integer"),
        ({"body_size": [2, 4]}, "body_size must be a list of 3"),
        ({"hinge": [1, 0.4]}, "hinge must be a list of 3"),
        ({"dt": "x"}, "dt must be a number"),
        ({"max_speed": 0}, "max_speed and max_angular_speed must be > 0"),
        ({"mass": float("nan")}, "mass must be a finite number"),
    ):
        with pytest.raises(ConfigError, match=words):
            FlyParams.from_dict(bad)
    assert P.with_(dt=2.5e-4).steps_per_control == 40
    assert FlyParams.from_dict(P.to_dict()) == P
    assert FlyParams.from_dict({"body_size": [2.0, 4.0, 1.0]}) == P  # lists from JSON become tuples
    hash(P.with_(rho=0.0))  # usable as a jit static argument


def test_wing_rotation_closed_form_matches_matrix_product():
    """The multiplied-out wing rotation equals R_z(sweep) · R_y(−flap) · R_x(feather)."""
    from animat.fly.kinematics import wing_rotation
    from animat.rotations import rot_x, rot_y, rot_z

    a = jnp.asarray(np.random.default_rng(0).uniform(-1.2, 1.2, (50, 3)), jnp.float32)
    ref = rot_z(a[:, 2]) @ rot_y(-a[:, 0]) @ rot_x(a[:, 1])
    np.testing.assert_allclose(np.asarray(wing_rotation(a)), np.asarray(ref), atol=1e-6)


def test_wing_angular_velocity_matches_finite_differences_of_the_rotation():
    """ω in the body frame from Ṙ Rᵀ (R: wing -> body), central differences along the motion."""
    from animat.fly.kinematics import wing_angular_velocity, wing_rotation

    rng = np.random.default_rng(3)
    a = rng.uniform(-1.0, 1.0, (40, 3))
    r = rng.uniform(-5.0, 5.0, (40, 3))
    h = 1e-3
    rot = lambda x: np.asarray(wing_rotation(jnp.asarray(x, jnp.float32)), np.float64)
    W = (rot(a + h * r) - rot(a - h * r)) / (2 * h) @ np.swapaxes(rot(a), -1, -2)
    omega_fd = np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], -1)
    omega = np.asarray(wing_angular_velocity(jnp.asarray(a, jnp.float32), jnp.asarray(r, jnp.float32)))
    assert np.abs(omega).max() > 1.0
    np.testing.assert_allclose(omega, omega_fd, atol=2e-2)


def test_one_flapping_wing_rolls_the_fly_away_from_it():
    """The right wing (at +x) rowing alone, the left held flat: it lifts, and its lift on the right side
    gives a roll torque τ_y = −x F_z < 0 (right side up) and a sideways pull no larger than the lift."""
    _, _, period = feathering_stroke(P, np.zeros(1))
    dt = 1e-3
    angles, rates, _ = feathering_stroke(P, np.arange(int(round(5 * period / dt))) * dt)
    state = initial_state()

    def one(a, r):
        f, pts = wing_forces(P, state, jnp.stack([a, jnp.zeros(3)]), jnp.stack([r, jnp.zeros(3)]))
        return f.sum(0), jnp.cross(pts, f).sum(0)

    f, tau = (
        np.asarray(x, np.float64).mean(0) for x in jax.jit(jax.vmap(one))(jnp.asarray(angles), jnp.asarray(rates))
    )
    assert f[2] > 0.3 * WEIGHT and tau[1] < -0.3 * WEIGHT  # hinge at x = 1: the torque arm is about a unit
