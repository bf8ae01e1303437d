"""World-frame geometry of a fly for drawing: body corners and wing triangles via M = T × R."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from animat.fly.kinematics import MIRROR, wing_rotation
from animat.fly.model import FlyParams, box_corners, wing_triangle
from animat.rotations import homogeneous, quat_to_mat


def _to_world(M, pts):
    """Apply homogeneous ``M (4, 4)`` to points ``(K, 3)``."""
    h = jnp.concatenate([pts, jnp.ones((pts.shape[0], 1), pts.dtype)], axis=1)
    return (h @ M.T)[:, :3]


def points_function(params: FlyParams):
    """The jitted function ``(pos (T, 3), quat (T, 4), wing (T, 2, 3)) -> (body corners (T, 8, 3), wing triangles
    (T, 2, 3, 3))`` in world coordinates (right wing, then left) of a fly of ``params``; keep it to draw many times
    (a live view), each call of a new one compiles anew."""
    corners = jnp.asarray(box_corners(params.body_size))
    tri = jnp.asarray(wing_triangle(params))
    hinge = jnp.asarray(params.hinge, jnp.float32)

    def one(p, q, w):
        M = homogeneous(quat_to_mat(q), p)
        right = hinge + tri @ wing_rotation(w[0]).T
        left = (hinge + tri @ wing_rotation(w[1]).T) @ MIRROR.T
        return _to_world(M, corners), jnp.stack([_to_world(M, right), _to_world(M, left)])

    return jax.jit(jax.vmap(one))


def fly_points_world(params: FlyParams, pos, quat, wing):
    """Body corners ``(T, 8, 3)`` and wing triangles ``(T, 2, 3, 3)`` (right, left) in world coordinates.

    ``pos (T, 3)``, ``quat (T, 4)``, ``wing (T, 2, 3)`` rad.
    """
    body, wings = points_function(params)(jnp.asarray(pos), jnp.asarray(quat), jnp.asarray(wing))
    return np.asarray(body), np.asarray(wings)
