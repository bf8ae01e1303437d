"""Rotations in JAX: unit quaternions (w, x, y, z), rotation matrices, axis rotations (the NumPy
quaternions are :mod:`animat.quaternions`).

Orientation is integrated as a unit quaternion with the exponential map (never by integrating
Euler-angle rates); Euler angles appear only as an observation.
"""

from __future__ import annotations

import jax.numpy as jnp

from animat.quaternions import hamilton


def dot3(a, b):
    """Dot product over the last axis (size 3), as multiply-adds (fusable; see :func:`mat_vec`)."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def sum_rows(a):
    """``a.sum(axis=0)`` for a short leading axis, as a chain of adds that XLA fuses (a reduce op over a
    small axis inside a vmapped step costs several times more on CPU)."""
    out = a[0]
    for i in range(1, a.shape[0]):
        out = out + a[i]
    return out


def mat_vec(R, v):
    """``R (..., 3, 3) @ v (..., 3)`` as three multiply-adds of columns: pure elementwise work that XLA
    fuses (on CPU a batched tiny dot or a reduce over a size-3 axis costs far more:
    RESULTS.md, 'Measurements behind the code')."""
    return R[..., :, 0] * v[..., 0:1] + R[..., :, 1] * v[..., 1:2] + R[..., :, 2] * v[..., 2:3]


def mat_t_vec(R, v):
    """``R^T @ v`` (see :func:`mat_vec`)."""
    return R[..., 0, :] * v[..., 0:1] + R[..., 1, :] * v[..., 1:2] + R[..., 2, :] * v[..., 2:3]


def quat_mul(a, b):
    """Hamilton product ``a ⊗ b`` of quaternions ``(..., 4)`` (w first), in JAX."""
    return hamilton(a, b, jnp.stack)


def quat_to_mat(q):
    """Rotation matrix ``(..., 3, 3)`` of unit quaternion ``q (..., 4)``: world = R @ body."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    return jnp.stack(
        [
            jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def quat_exp(rotvec):
    """Quaternion of the rotation by vector ``rotvec (..., 3)`` (axis × angle, rad); exact, safe at 0."""
    sq = dot3(rotvec, rotvec)[..., None]
    # Near 0 use the Taylor series of cos(θ/2) and sin(θ/2)/θ, and keep sqrt away from 0 so the
    # gradient is finite too.
    small = sq < 1e-8
    angle = jnp.sqrt(jnp.where(small, 1.0, sq))
    k = jnp.where(small, 0.5 - sq / 48.0, jnp.sin(0.5 * angle) / angle)
    c = jnp.where(small, 1.0 - sq / 8.0, jnp.cos(0.5 * angle))
    return jnp.concatenate([c, k * rotvec], axis=-1)


def integrate_quat(q, omega_body, dt):
    """Advance orientation ``q`` by body-frame angular velocity ``omega_body`` (rad/s) over ``dt`` s."""
    q = quat_mul(q, quat_exp(omega_body * dt))
    # Renormalise with one Newton step of 1/sqrt(|q|²) (|q|² = 1 + ε -> 1 − O(ε²)): only multiply-adds,
    # so the result is bit-identical whatever the batch size (XLA CPU's vectorised rsqrt is not).
    sq = q[..., 0:1] ** 2 + dot3(q[..., 1:], q[..., 1:])[..., None]
    return q * (1.5 - 0.5 * sq)


def euler_xyz(q):
    """Angles (about x, about y, about z) in rad, ZYX convention, of quaternion ``q (..., 4)``."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    ax = jnp.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    ay = jnp.arcsin(jnp.clip(2 * (w * y - z * x), -1.0, 1.0))
    az = jnp.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return jnp.stack([ax, ay, az], axis=-1)


def rot_x(a):
    c, s = jnp.cos(a), jnp.sin(a)
    o, z = jnp.ones_like(a), jnp.zeros_like(a)
    return jnp.stack([jnp.stack([o, z, z], -1), jnp.stack([z, c, -s], -1), jnp.stack([z, s, c], -1)], -2)


def rot_y(a):
    c, s = jnp.cos(a), jnp.sin(a)
    o, z = jnp.ones_like(a), jnp.zeros_like(a)
    return jnp.stack([jnp.stack([c, z, s], -1), jnp.stack([z, o, z], -1), jnp.stack([-s, z, c], -1)], -2)


def rot_z(a):
    c, s = jnp.cos(a), jnp.sin(a)
    o, z = jnp.ones_like(a), jnp.zeros_like(a)
    return jnp.stack([jnp.stack([c, -s, z], -1), jnp.stack([s, c, z], -1), jnp.stack([z, z, o], -1)], -2)


def homogeneous(R, t):
    """4×4 homogeneous matrix ``M = T × R`` from rotation ``R (3,3)`` and translation ``t (3,)``."""
    top = jnp.concatenate([R, t[:, None]], axis=1)
    return jnp.concatenate([top, jnp.array([[0.0, 0.0, 0.0, 1.0]], dtype=R.dtype)], axis=0)
