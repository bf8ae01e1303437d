"""Collision projection after decoding (Holden et al. 2019, section 5): vertices that the subspace
model leaves inside a proxy (sphere or capsule) are pushed out along the shortest way onto its
surface. A pure post-process on positions; the subspace state is not changed.

Proxies are plain arrays so that the same code runs in NumPy and in jitted JAX (``xp``):
``spheres`` (S, 4) rows ``[cx, cy, cz, radius]``; ``capsules`` (C, 7) rows
``[ax, ay, az, bx, by, bz, radius]`` (segment a-b), all in metres.
"""

from __future__ import annotations

import numpy as np

_FALLBACK = (0.0, 1.0, 0.0)  # direction for a vertex exactly at a proxy's centre line


def _push(xp, X, nearest, radius):
    """Move rows of X (V, 3) closer than ``radius`` (V, 1) to ``nearest`` (V, 3) onto that distance."""
    offset = X - nearest
    dist = xp.sqrt(xp.sum(offset * offset, axis=-1, keepdims=True))
    unit = xp.where(dist > 1e-9, offset / xp.maximum(dist, 1e-9), xp.asarray(_FALLBACK, dtype=X.dtype))
    return xp.where(dist < radius, nearest + radius * unit, X)


def project(X, spheres, capsules, xp=np):
    """X (V, 3) m -> X with no vertex inside any sphere or capsule (applied in turn; proxies that
    overlap each other can push a vertex into a previous one, which the scenes here never do)."""
    for i in range(spheres.shape[0]):
        X = _push(xp, X, spheres[i, None, :3], spheres[i, 3])
    for i in range(capsules.shape[0]):
        a, b, r = capsules[i, :3], capsules[i, 3:6], capsules[i, 6]
        ab = b - a
        s = xp.clip(((X - a) @ ab) / xp.maximum(ab @ ab, 1e-12), 0.0, 1.0)
        X = _push(xp, X, a + s[:, None] * ab, r)
    return X


def max_penetration(X: np.ndarray, spheres: np.ndarray, capsules: np.ndarray) -> float:
    """Deepest penetration (m, >= 0) of any vertex of X (V, 3) into any proxy."""
    depth = 0.0
    for c in spheres:
        depth = max(depth, float(np.max(c[3] - np.linalg.norm(X - c[:3], axis=-1))))
    for c in capsules:
        a, b, r = c[:3], c[3:6], c[6]
        s = np.clip((X - a) @ (b - a) / max(float((b - a) @ (b - a)), 1e-12), 0, 1)
        depth = max(depth, float(np.max(r - np.linalg.norm(X - (a + s[:, None] * (b - a)), axis=-1))))
    return max(depth, 0.0)
