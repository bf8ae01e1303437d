"""Unit quaternions (w, x, y, z) in NumPy (float64), for the systems that run outside JAX (imitate, the
surrogate's cape scene); :mod:`animat.rotations` holds the JAX rotations of the jitted systems and shares
:func:`hamilton`, the product, with this module.

All functions broadcast over leading axes: ``q: (..., 4)``, ``v: (..., 3)``. A rotation vector is
axis × angle (rad).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def normalize(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def conj(q: np.ndarray) -> np.ndarray:
    q = np.asarray(q, dtype=np.float64)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def hamilton(a, b, stack: Callable = np.stack):
    """Hamilton product ``a ⊗ b`` (apply ``b`` first, then ``a``) of quaternions ``(..., 4)`` of any array
    library: ``stack`` is its ``stack`` (``jnp.stack`` in :func:`animat.rotations.quat_mul`)."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` in float64 (apply ``b`` first, then ``a``)."""
    return hamilton(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cross products of vectors ``(..., 3)`` (broadcast; cheaper than ``np.cross`` on small arrays)."""
    ax, ay, az = a[..., 0], a[..., 1], a[..., 2]
    bx, by, bz = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx], axis=-1)


def rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vectors ``v (..., 3)`` by unit quaternions ``q (..., 4)``: ``q v q*`` expanded, with ``u`` the vector
    part and ``w`` the real part of ``q``, as ``v + w t + u × t``, ``t = 2 u × v`` (two cross products
    instead of two quaternion products)."""
    q, v = np.asarray(q, dtype=np.float64), np.asarray(v, dtype=np.float64)
    t = 2.0 * cross(q[..., 1:], v)
    return v + q[..., :1] * t + cross(q[..., 1:], t)


def log(q: np.ndarray) -> np.ndarray:
    """Rotation vector (rad) of a unit quaternion, the shortest way round (|angle| ≤ π)."""
    q = np.asarray(q, dtype=np.float64)
    q = np.where(q[..., :1] < 0.0, -q, q)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    scale = np.where(s > 1e-12, angle / np.maximum(s, 1e-300), 2.0)  # small-angle limit: 2 v
    return v * scale


def exp(r: np.ndarray) -> np.ndarray:
    """Unit quaternion of a rotation vector ``r (..., 3)`` (rad)."""
    r = np.asarray(r, dtype=np.float64)
    angle = np.linalg.norm(r, axis=-1, keepdims=True)
    half = 0.5 * angle
    k = np.where(angle > 1e-12, np.sin(half) / np.maximum(angle, 1e-300), 0.5)
    return np.concatenate([np.cos(half), r * k], axis=-1)


def angle_between(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle (rad, in [0, π]) of the rotation ``a⁻¹ ⊗ b`` taking ``a`` to ``b`` (``b ⊖ a``)."""
    d = np.abs(np.sum(normalize(a) * normalize(b), axis=-1))
    return 2.0 * np.arccos(np.clip(d, 0.0, 1.0))


def slerp(a: np.ndarray, b: np.ndarray, u: float | np.ndarray) -> np.ndarray:
    """Spherical interpolation from ``a`` (u=0) to ``b`` (u=1) along the shorter arc."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)[..., None] if np.ndim(u) else u
    delta = mul(conj(a), b)
    return normalize(mul(a, exp(log(delta) * u)))


def about_axis(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Quaternions of rotations by ``angle (...,)`` rad about the unit ``axis (3,)``."""
    angle = np.asarray(angle, dtype=np.float64)[..., None]
    return np.concatenate([np.cos(0.5 * angle), np.sin(0.5 * angle) * np.asarray(axis, dtype=np.float64)], axis=-1)


def heading(q: np.ndarray) -> np.ndarray:
    """Yaw-only rotation (about +z) of the heading of ``q (..., 4)``: the direction its x axis points, flattened."""
    q = np.asarray(q, dtype=np.float64)
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    # the image of the x axis, (1 - 2(y² + z²), 2(xy + wz), ·): its direction in the horizontal plane
    return about_axis(np.array([0.0, 0.0, 1.0]), np.arctan2(2.0 * (x * y + w * z), 1.0 - 2.0 * (y * y + z * z)))


def angle_about(q: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """Signed angle (rad, in (-π, π]) of ``q`` about ``axis``; exact for rotations about that axis."""
    q = np.asarray(q, dtype=np.float64)
    q = np.where(q[..., :1] < 0.0, -q, q)
    return 2.0 * np.arctan2(q[..., 1:] @ np.asarray(axis, dtype=np.float64), q[..., 0])
