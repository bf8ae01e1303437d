"""Collision projection after decoding (Holden et al. 2019, section 5): vertices that the subspace
model leaves inside a sphere are pushed out radially onto its surface (plus the cloth's contact
radius). A pure post-process on positions; the subspace state is not changed."""

from __future__ import annotations

import numpy as np


def project_out_of_sphere(X: np.ndarray, centre: np.ndarray, radius: float) -> np.ndarray:
    """X (..., V, 3) m, centre (..., 3) m -> X with every vertex at distance >= radius from centre."""
    X = np.asarray(X, np.float32)
    c = np.asarray(centre, np.float32)[..., None, :]
    offset = X - c
    dist = np.linalg.norm(offset, axis=-1, keepdims=True)
    inside = dist < radius
    safe = np.where(dist > 1e-9, offset / np.maximum(dist, 1e-9), np.array([0.0, 1.0, 0.0], np.float32))
    return np.where(inside, c + radius * safe, X)
