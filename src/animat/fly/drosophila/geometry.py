"""World-frame geometry of the fruit fly for drawing: the body's spheroid and the wings' planform outlines (m)."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from animat.fly.drosophila.aero import MIRROR, wing_frames
from animat.fly.drosophila.model import DrosophilaParams, chord
from animat.rotations import quat_to_mat

N_LAT, N_LON = 7, 12  # spheroid mesh: latitude rings (poles excluded) and meridians
N_OUTLINE = 10  # span stations along each wing's leading and trailing edges


def spheroid_mesh(params: DrosophilaParams) -> tuple[np.ndarray, np.ndarray]:
    """The body's prolate spheroid (long axis along body x) as vertices ``(V, 3)`` m (body frame) and
    triangles ``(K, 3)`` (indices)."""
    a, b = params.body_length / 2, params.body_diameter / 2
    lat = np.linspace(0, np.pi, N_LAT + 2)[1:-1]
    lon = np.linspace(0, 2 * np.pi, N_LON, endpoint=False)
    ring = np.stack(
        [
            np.repeat(a * np.cos(lat), N_LON),
            np.outer(b * np.sin(lat), np.cos(lon)).ravel(),
            np.outer(b * np.sin(lat), np.sin(lon)).ravel(),
        ],
        axis=1,
    )
    verts = np.concatenate([[[a, 0.0, 0.0]], ring, [[-a, 0.0, 0.0]]]).astype(np.float32)
    tris = []
    ring_start = lambda i: 1 + i * N_LON
    for j in range(N_LON):
        k = (j + 1) % N_LON
        tris.append([0, ring_start(0) + j, ring_start(0) + k])
        tris.append([len(verts) - 1, ring_start(N_LAT - 1) + k, ring_start(N_LAT - 1) + j])
        for i in range(N_LAT - 1):
            p, q = ring_start(i), ring_start(i + 1)
            tris += [[p + j, q + j, q + k], [p + j, q + k, p + k]]
    return verts, np.asarray(tris, np.uint32)


def wing_outline(params: DrosophilaParams) -> np.ndarray:
    """One wing's planform as ``(2 N_OUTLINE, 2)`` points ``(span r, chordwise x)`` m: the leading edge
    ``x̂0 c(r)`` ahead of the span axis, root to tip, then the trailing edge back to the root."""
    r = np.linspace(0.02, 0.98, N_OUTLINE) * params.wing_length
    c = chord(params, r)
    lead = np.stack([r, -params.pitch_axis * c], axis=1)
    trail = np.stack([r, (1.0 - params.pitch_axis) * c], axis=1)[::-1]
    return np.concatenate([lead, trail]).astype(np.float32)


@functools.lru_cache(maxsize=8)
def points_function(params: DrosophilaParams):
    """The jitted ``(pos (T, 3), quat (T, 4), angles (T, 2, 3)) -> (body (T, V, 3), wings (T, 2, 2 N_OUTLINE, 3))`` of
    :func:`fly_world`, compiled once per fly (a live view draws with it every frame)."""
    verts = jnp.asarray(spheroid_mesh(params)[0])
    outline = jnp.asarray(wing_outline(params))
    hinge = jnp.asarray(params.hinge, jnp.float32) * MIRROR  # (2, 3)

    def one(p, q, a):
        R = quat_to_mat(q)
        e_s, e_c = wing_frames(params, a)  # (2, 3) body frame
        wings = hinge[:, None, :] + outline[None, :, :1] * e_s[:, None, :] + outline[None, :, 1:] * e_c[:, None, :]
        return verts @ R.T + p, wings @ R.T + p

    return jax.jit(jax.vmap(one))


def fly_world(params: DrosophilaParams, pos, quat, angles) -> tuple[np.ndarray, np.ndarray]:
    """Body vertices ``(T, V, 3)`` and wing outlines ``(T, 2, 2 N_OUTLINE, 3)`` (right, left) in the world, m,
    from ``pos (T, 3)`` m, ``quat (T, 4)`` and wing angles ``angles (T, 2, 3)`` rad."""
    body, wings = points_function(params)(
        jnp.asarray(pos, jnp.float32), jnp.asarray(quat, jnp.float32), jnp.asarray(angles, jnp.float32)
    )
    return np.asarray(body), np.asarray(wings)
