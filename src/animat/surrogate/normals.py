"""Vertex normals: exact ones from a mesh, and the runtime's linear regression from the subspace state.

Reference normals are the area-weighted sums of the adjacent triangles' normals, normalised. At run
time the surrogate does not recompute them from the decoded mesh; as in Holden et al. 2019
(section 5) it predicts them by linear regression from the subspace state:

    n(z) = normalise(R^T [z, 1]),      R: (k + 1, 3V), fitted by least squares on the training frames.

The runtime uses the optimal rank-r version of that regression (:func:`reduced_rank_factors`):
``n(z) = normalise([z A, 1] B)``, A (k, r), B (r + 1, 3V), which streams (r + 1) x 3V weights per
frame instead of (k + 1) x 3V.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from animat import runs


def vertex_normals(X: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """X (..., V, 3) m, triangles (F, 3) -> unit normals (..., V, 3) float32 (area-weighted).

    The per-vertex sums are one sparse (V, F) incidence product over all frames at once."""
    X = np.asarray(X, np.float32)
    tri = np.asarray(triangles)
    a, b, c = X[..., tri[:, 0], :], X[..., tri[:, 1], :], X[..., tri[:, 2], :]
    face = np.cross(b - a, c - a)  # (..., F, 3), length = 2 x area
    V, F = X.shape[-2], len(tri)
    lead = face.shape[:-2]
    flat = np.moveaxis(face, -2, 0).reshape(F, -1)  # (F, ... * 3)
    N = np.moveaxis((incidence(tri, V, np.float32) @ flat).reshape(V, *lead, 3), 0, -2)
    return normalise(N)


def incidence(triangles: np.ndarray, n_vertices: int, dtype=np.float64):
    """Sparse (V, F) matrix with a 1 where vertex v is a corner of triangle f: ``incidence @ per_face``
    sums a per-triangle quantity (F, ...) onto the vertices."""
    from scipy.sparse import csr_matrix

    tri = np.asarray(triangles)
    F = len(tri)
    return csr_matrix((np.ones(3 * F, dtype), (tri.T.reshape(-1), np.tile(np.arange(F), 3))), shape=(n_vertices, F))


def normalise(N: np.ndarray) -> np.ndarray:
    """Rows of the last axis scaled to unit length (zero rows stay zero)."""
    length = np.linalg.norm(N, axis=-1, keepdims=True)
    return (N / np.maximum(length, 1e-12)).astype(np.float32)


def fit_normal_regression(Z: np.ndarray, N: np.ndarray, ridge: float = 1e-6) -> np.ndarray:
    """Least squares ``[Z, 1] R ~= N``: Z (T, k), N (T, V, 3) -> R (k + 1, 3V) float32.

    A small ridge (``ridge`` x the mean diagonal of the normal matrix) keeps the solve well posed
    when the frames do not span every direction."""
    Z = np.asarray(Z, np.float64)
    A = np.concatenate([Z, np.ones((len(Z), 1))], axis=1)
    B = np.asarray(N, np.float64).reshape(len(Z), -1)
    G = A.T @ A
    G += ridge * np.trace(G) / len(G) * np.eye(len(G))
    return np.linalg.solve(G, A.T @ B).astype(np.float32)


def load_regression(run_dir: str | os.PathLike) -> np.ndarray:
    """The regression R (k + 1, 3V) saved by ``animat surrogate train`` in ``run_dir/normals.npz``;
    CheckpointError when it is missing or unreadable."""
    path = Path(run_dir) / "normals.npz"
    return runs.read_npz(path, keys=("R",), what="normals file")["R"]


def predict_normals(R: np.ndarray, z: np.ndarray) -> np.ndarray:
    """R (k + 1, 3V), z (..., k) -> unit normals (..., V, 3)."""
    z = np.asarray(z, np.float32)
    flat = z @ R[:-1] + R[-1]
    return normalise(flat.reshape(*flat.shape[:-1], -1, 3))


def reduced_rank_factors(R: np.ndarray, singular_values: np.ndarray, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """Optimal rank-``rank`` regression from a full one: R (k + 1, 3V) (last row: intercept), the PCA
    singular values s (k,) of the frames it was fitted on -> A (k, r), B (r + 1, 3V) float32 with
    raw normals ``[z A, 1] B``.

    Reduced-rank regression (Izenman 1975; intercept kept, as for centred data): among the
    coefficient matrices C of rank r, ``Z C`` closest to the fitted values ``Z R_z`` over the
    training frames (Frobenius) is ``R_z V_r V_r^T``, with V_r the top-r right singular vectors of
    ``Z R_z``. PCA coordinates over those frames have zero mean and Gram ``Z^T Z = diag(s^2)``, so
    ``Z R_z`` has the right singular vectors of ``diag(s) R_z``: no data needed. ``A = R_z V_r``,
    ``B = [V_r^T; intercept]``; rank = k gives R back (to rounding). Keeping the intercept is
    optimal only because those coordinates have zero mean (``[Z, 1]`` has orthogonal blocks):
    R must be fitted on the frames the PCA was fitted on, as :meth:`animat.surrogate.training_data.TrainingData.fit`
    does (the same sample of training frames)."""
    R = np.asarray(R, np.float64)
    s = np.asarray(singular_values, np.float64)
    Rz = R[:-1]
    _, _, vt = np.linalg.svd(s[:, None] * Rz, full_matrices=False)
    Vr = vt[:rank].T  # (3V, r)
    return (Rz @ Vr).astype(np.float32), np.concatenate([Vr.T, R[-1:]]).astype(np.float32)


def reduced_rank(R: np.ndarray, singular_values: np.ndarray, rank: int) -> np.ndarray:
    """The rank-``rank`` regression of :func:`reduced_rank_factors` as one (k + 1, 3V) matrix, for
    :func:`predict_normals`."""
    A, B = reduced_rank_factors(R, singular_values, rank)
    return np.concatenate([A @ B[:-1], B[-1:]])


def angle_degrees(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Angle between unit vectors along the last axis, degrees."""
    cos = np.clip(np.sum(np.asarray(A) * np.asarray(B), axis=-1), -1.0, 1.0)
    return np.degrees(np.arccos(cos))
