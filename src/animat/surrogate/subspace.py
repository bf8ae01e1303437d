"""PCA subspace of cloth states: z = U (x - mean), x ~= mean + U^T z.

``x`` is a frame's vertex positions flattened to (3V,); ``U`` (k, 3V) holds orthonormal principal
directions from an SVD of the centred frames (a random sample of at most ``max_samples`` frames
when the data are big).

With a ``frame`` (:class:`animat.surrogate.frame.AzimuthFrame`, the flag's azimuth about its pole)
the state is ``[z', c phi]`` (k + 1,): ``z'`` the coordinates of the frame turned back by its azimuth
``phi``, and :meth:`PCA.decode` turns the decoded cloth by ``phi`` again.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from animat import runs
from animat.config import require
from animat.errors import CheckpointError, ConfigError
from animat.surrogate.frame import AzimuthFrame, turn_vectors
from animat.surrogate.normals import predict_normals


@dataclass
class PCA:
    mean: np.ndarray  # (D,) float32
    components: np.ndarray  # (k, D) float32, orthonormal rows
    singular_values: np.ndarray  # (k,)
    frame: AzimuthFrame | None = None

    @property
    def n_components(self) -> int:
        """k, the basis size."""
        return int(self.components.shape[0])

    @property
    def state_dim(self) -> int:
        """Size of a state: k, or k + 1 with a frame (its azimuth)."""
        return self.n_components + (self.frame is not None)

    def truncate(self, k: int) -> PCA:
        return PCA(self.mean, self.components[:k], self.singular_values[:k], self.frame)

    def encode(self, X: np.ndarray) -> np.ndarray:
        """(..., V, 3) or (..., D) positions -> (..., state_dim) states (with a frame: the azimuth
        unwrapped along the frames, the axis before the vertices)."""
        flat = _flatten(X, self.mean.shape[0])
        if self.frame is None:
            return ((flat - self.mean) @ self.components.T).astype(np.float32)
        X = flat.reshape(*flat.shape[:-1], -1, 3)
        phi = self.frame.angles(X)
        z = PCA(self.mean, self.components, self.singular_values).encode(self.frame.rotate(X, -phi))
        return np.concatenate([z, (self.frame.scale * phi)[..., None].astype(np.float32)], axis=-1)

    def decode(self, Z: np.ndarray) -> np.ndarray:
        """(..., state_dim) -> (..., V, 3) positions."""
        Z = np.asarray(Z, np.float32)
        flat = Z[..., : self.n_components] @ self.components + self.mean
        X = flat.reshape(*flat.shape[:-1], -1, 3)
        return X if self.frame is None else self.frame.rotate(X, self.azimuth(Z))

    def coefficients(self, Z: np.ndarray) -> np.ndarray:
        """States (..., state_dim) -> their subspace coefficients (..., k): without a frame's azimuth,
        an angle that may turn on (range checks are over the coefficients)."""
        return np.asarray(Z)[..., : self.n_components]

    def azimuth(self, Z: np.ndarray) -> np.ndarray:
        """States (..., k + 1) -> the frame's azimuth (...,) rad."""
        return np.asarray(Z, np.float64)[..., self.n_components] / self.frame.scale

    def normals(self, R: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """Unit normals (..., V, 3) of states Z by the regression R (k + 1, 3V) on the coordinates
        (:func:`animat.surrogate.normals.predict_normals`), turned by the azimuth with a frame."""

        N = predict_normals(R, np.asarray(Z)[..., : self.n_components])
        return N if self.frame is None else turn_vectors(N, self.azimuth(Z)[..., None]).astype(np.float32)

    def round_trip(self, X: np.ndarray) -> np.ndarray:
        """(..., V, 3) positions -> their projection on the subspace, (..., V, 3)."""
        return self.decode(self.encode(X))

    def save(self, path: str | os.PathLike) -> Path:
        frame = self.frame.save_arrays() if self.frame is not None else {}
        return runs.atomic_save_npz(
            path, mean=self.mean, components=self.components, singular_values=self.singular_values, **frame
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> PCA:
        z = runs.read_npz(path, keys=("mean", "components", "singular_values"), what="PCA file")
        try:
            return cls(z["mean"], z["components"], z["singular_values"], AzimuthFrame.from_arrays(z))
        except (KeyError, ValueError, TypeError) as exc:
            raise CheckpointError(f"cannot read PCA file {str(path)!r}: {exc!r}") from None


def _flatten(X: np.ndarray, D: int) -> np.ndarray:
    X = np.asarray(X, np.float32)
    if X.shape[-1] == D:
        return X
    if X.shape[-1] == 3 and X.shape[-2] * 3 == D:
        return X.reshape(*X.shape[:-2], D)
    raise ConfigError(f"positions of shape {X.shape} do not match a subspace of dimension {D}")


def fit_pca(
    frames: np.ndarray,
    n_components: int | None = None,
    *,
    max_samples: int = 4000,
    seed: int = 0,
    frame: AzimuthFrame | None = None,
) -> PCA:
    """PCA of ``frames`` (N, V, 3) or (N, D); keeps ``n_components`` (all, min(N, D), if None).
    With a ``frame``: of the frames (N, V, 3) turned back by their azimuths (module docstring).

    A truncated basis (k <= min(N, D) / 4) comes from a randomised SVD (Halko, Martinsson & Tropp
    2011, algorithm 4.4: a Gaussian sketch of k + 16 columns and 4 power iterations, float64):
    about min(N, D) / k times cheaper than the full SVD and equal to it to rounding on cloth data."""
    X = np.asarray(frames, np.float32)
    X = X.reshape(X.shape[0], -1)
    if X.shape[0] > max_samples:
        X = X[np.sort(np.random.default_rng(seed).choice(X.shape[0], max_samples, replace=False))]
    if frame is not None:
        X = X.reshape(X.shape[0], -1, 3)
        X = frame.rotate(X, -frame.angles(X)).reshape(X.shape[0], -1)
    mean = X.mean(axis=0)
    A = (X - mean).astype(np.float64)
    rank = min(A.shape)
    k = rank if n_components is None else int(n_components)
    require(f"components (at most {rank} for these data)", k, ge=1, le=rank)
    if 4 * k <= rank:
        Q = np.linalg.qr(A @ np.random.default_rng(seed).normal(size=(A.shape[1], k + 16)))[0]
        for _ in range(4):
            Q = np.linalg.qr(A @ np.linalg.qr(A.T @ Q)[0])[0]
        _, s, vt = np.linalg.svd(Q.T @ A, full_matrices=False)
    else:
        _, s, vt = np.linalg.svd(A, full_matrices=False)
    return PCA(mean.astype(np.float32), vt[:k].astype(np.float32), s[:k].astype(np.float32), frame)


def range_ratios(Z: np.ndarray, train_Z: np.ndarray) -> np.ndarray:
    """|z_j - c_j| / h_j for states Z (T, k), with c_j and h_j the centre and half-width of
    component j's range over the training states train_Z (N, k) (only their per-component min and
    max matter: a (2, k) array of them will do); (T, k), 1 at the edge of the range."""
    lo, hi = train_Z.min(0), train_Z.max(0)
    return np.abs(Z - (hi + lo) / 2) / np.maximum((hi - lo) / 2, 1e-9)


def reconstruction_table(pca: PCA, frames: np.ndarray, ks: Sequence[int], side_m: float) -> list[dict]:
    """Mean and max per-vertex reconstruction error (m and % of cloth side) for each k in ``ks``."""
    X = np.asarray(frames, np.float32)
    X = X.reshape(X.shape[0], -1, 3)
    Z = pca.encode(X)
    rows = []
    for k in ks:
        k = min(int(k), pca.n_components)
        rec = pca.truncate(k).decode(np.concatenate([Z[:, :k], Z[:, pca.n_components :]], axis=1))  # the azimuth kept
        err = np.linalg.norm(rec - X, axis=-1)
        rows.append(
            {
                "components": k,
                "mean_error_m": float(err.mean()),
                "max_error_m": float(err.max()),
                "mean_error_percent_of_size": float(100 * err.mean() / side_m),
            }
        )
    return rows
