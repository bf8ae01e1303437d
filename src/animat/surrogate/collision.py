"""Collision projection after decoding (Holden et al. 2019, section 5): vertices that the subspace
model leaves inside a proxy (sphere or capsule) are pushed out along the shortest way onto its
surface. A pure post-process on positions; the subspace state is not changed.

Proxies are plain arrays so that the same code runs in NumPy and in jitted JAX (``xp``):
``spheres`` (S, 4) rows ``[cx, cy, cz, radius]``; ``capsules`` (C, 7) rows
``[ax, ay, az, bx, by, bz, radius]`` (segment a-b), all in metres.

:func:`project` is the plain version (NumPy or JAX); :class:`Projector` is the per-frame NumPy one
of the runtime, which gives the same positions but touches only the vertices near each proxy.
"""

from __future__ import annotations

import math

import numpy as np

_FALLBACK = (0.0, 1.0, 0.0)  # direction for a vertex exactly at a proxy's centre line
INSIDE_TOLERANCE_M = 1e-5  # a vertex counts as inside a proxy deeper than this: float32 rounding ~1 m out is ~1e-7 m


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
        a, b = capsules[i, :3], capsules[i, 3:6]
        X = _push_capsule(xp, X, a, b - a, capsules[i, 6])
    return X


def _push_capsule(xp, X, a, ab, radius):
    """Rows of X (V, 3) closer than ``radius`` to the segment a -> a + ab pushed onto that distance."""
    s = xp.clip(((X - a) @ ab) / xp.maximum(ab @ ab, 1e-12), 0.0, 1.0)
    return _push(xp, X, a + s[:, None] * ab, radius)


class Projector:
    """In-place :func:`project` for a fixed vertex count V, with preallocated scratch.

    A cheap prefilter finds the vertices that can be inside a proxy. The squared distance ``d^2`` of
    x to the proxy's axis line through a (for a sphere, to its centre a) is a lower bound of the
    squared distance to the proxy's core (segment or centre), so a vertex inside has ``d^2 < r^2``.
    The prefilter evaluates ``(d^2 - |a|^2) / 2 = |x|^2 / 2 - x . a - ((x - a) . u)^2 / 2`` (u the
    unit axis) for all vertices from ``|x|^2`` and matrix-vector products (no (V, 3) broadcast, no
    temporaries) and compares it with ``(r^2 - |a|^2) / 2`` plus a float32 rounding margin; when
    any vertex is below, those candidates go through the exact push of :func:`project`; every
    other vertex is provably outside and is not touched."""

    def __init__(self, n_vertices: int):
        V = int(n_vertices)
        self._sq = np.empty((V, 3), np.float32)
        self._hxx = np.empty(V, np.float32)  # |x|^2 / 2
        self._d = np.empty(V, np.float32)
        self._q = np.empty(V, np.float32)
        self._half = np.full(3, 0.5, np.float32)

    def __call__(self, X: np.ndarray, spheres: np.ndarray, capsules: np.ndarray) -> np.ndarray:
        """X (V, 3) float32 C-contiguous m, modified in place and returned."""
        if spheres.shape[0] == 0 and capsules.shape[0] == 0:
            return X
        np.multiply(X, X, out=self._sq)
        np.dot(self._sq, self._half, out=self._hxx)
        for c in spheres:
            idx = self._candidates(X, c[:3], None, 0.0, float(c[3]))
            if idx is not None:
                X[idx] = _push(np, X[idx], c[None, :3], c[3])
                self._moved(X, idx)
        for c in capsules:
            a, ab, r = c[:3], c[3:6] - c[:3], c[6]
            ab2 = float(ab @ ab)
            idx = self._candidates(
                X, a, ab / np.float32(np.sqrt(2 * ab2)) if ab2 > 1e-18 else None, np.sqrt(ab2), float(r)
            )
            if idx is not None:
                X[idx] = _push_capsule(np, X[idx], a, ab, r)
                self._moved(X, idx)
        return X

    def _moved(self, X: np.ndarray, idx: np.ndarray) -> None:
        """|x|^2 / 2 of the vertices a proxy just pushed, so that the next proxy sees where they are now."""
        self._hxx[idx] = 0.5 * np.einsum("ij,ij->i", X[idx], X[idx])

    def _candidates(
        self, X: np.ndarray, a: np.ndarray, u: np.ndarray | None, length: float, r: float
    ) -> np.ndarray | None:
        """Indices of the vertices whose distance to the line a + t u (u: the unit axis / sqrt(2);
        the point a if u is None) can be < r, or None; a vertex inside the proxy lies within
        ``length + r`` of a, which bounds the rounding error of the float32 terms."""
        d = self._d
        np.dot(X, a, out=d)
        np.subtract(self._hxx, d, out=d)  # (|x - a|^2 - |a|^2) / 2
        if u is not None:
            q = self._q
            np.dot(X, u, out=q)
            q -= np.float32(a @ u)  # (x - a) . u / sqrt(2)
            q *= q
            d -= q
        ax, ay, az = a.tolist()  # Python floats: no NumPy scalar overhead
        aa = ax * ax + ay * ay + az * az
        reach = (math.sqrt(aa) + length + abs(r)) ** 2 + 1.0  # >= |x|^2, |a|^2 of any vertex inside
        limit = 0.5 * (r * r - aa) + 1e-5 * reach  # margin: 8x the rounding error
        if d.min() >= limit:
            return None
        return np.flatnonzero(d < limit)


def penetration_depth(X: np.ndarray, spheres: np.ndarray, capsules: np.ndarray) -> np.ndarray:
    """Per vertex of X (V, 3): how deep (m) it lies inside the deepest proxy, negative outside all
    (-inf with no proxy)."""
    depth = np.full(len(X), -np.inf)
    for c in spheres:
        depth = np.maximum(depth, c[3] - np.linalg.norm(X - c[:3], axis=-1))
    for c in capsules:
        a, ab = c[:3], c[3:6] - c[:3]
        s = np.clip((X - a) @ ab / max(float(ab @ ab), 1e-12), 0.0, 1.0)
        depth = np.maximum(depth, c[6] - np.linalg.norm(X - (a + s[:, None] * ab), axis=-1))
    return depth


def max_penetration(X: np.ndarray, spheres: np.ndarray, capsules: np.ndarray) -> float:
    """Deepest penetration (m, >= 0) of any vertex of X (V, 3) into any proxy."""
    return max(float(penetration_depth(X, spheres, capsules).max(initial=0.0)), 0.0)
