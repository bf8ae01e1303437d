"""The flag's own frame: its azimuth about the pole (``TrainConfig.cloth_frame = "azimuth"``).

The flag scene is symmetric under rotations about its pole: the pole is vertical (along gravity),
the wind horizontal and the cloth isotropic, so a flag turned by an angle about the pole, in a wind
turned by the same angle, moves exactly as the flag did, turned. A PCA of world frames spends
components on the flag's swing about the pole (its azimuth spans ~ +-70 deg in the data), and the
network has to learn the same dynamics at every azimuth. In the flag's own frame it does not: the
surrogate's state is ``[z', c phi]``, with ``phi`` the flag's azimuth about the pole and ``z'`` the
PCA coordinates of the flag turned back by ``-phi``; the network sees the wind turned into the
flag's frame and ``phi`` only through its changes (:func:`animat.surrogate.inputs.network_input`). This is
the paper's moving frame (Holden et al. 2019, section 4.1: the cloth in the frame of the body it
hangs from), with the frame taken from the cloth itself, as the flag hangs from a pole that does
not turn. On the flag it lowers the held-out error against the same training in the world frame at every
schedule tried. But nothing pulls the azimuth back (alpha = 1), so a small residual of the network in still air
keeps the flag turning about the pole; the flag config therefore trains with ``rest_weight``
(:mod:`animat.surrogate.rest`), which nearly stops it at almost the same error (the figures:
RESULTS.md, 'Measurements behind the code').

``phi`` = direction of ``sum_i r_i (dx_i, dy_i)`` over the free vertices, with ``(dx_i, dy_i)`` a
vertex's horizontal offset from the pole axis and ``r_i`` its length (the vertices far from the pole
weigh most: a flag hanging limp near the pole has a poorly defined direction), unwrapped along a
sequence of frames. ``c = rho sqrt(V)``, with ``rho`` the RMS horizontal distance of the free
vertices from the pole over the training frames: a turn ``d phi`` then moves the vertices by about
``c d phi`` in the Euclidean norm of the flattened positions, the norm of ``z'`` (orthonormal basis),
so the two parts of the state weigh alike in the L1 training loss.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animat.errors import ConfigError


@dataclass(frozen=True)
class AzimuthFrame:
    pole: np.ndarray  # (2,) x, y of the vertical pole axis, m
    free: np.ndarray  # (F,) indices of the vertices not on the pole
    scale: float  # c, m per radian of azimuth in the state

    @classmethod
    def fit(cls, frames: np.ndarray, pinned: np.ndarray) -> AzimuthFrame:
        """From frames (N, V, 3) m of the flag and the indices of its pole's vertices."""
        X = np.asarray(frames, np.float64)
        pinned = np.asarray(pinned, np.int64)
        pole = X[0, pinned, :2].mean(axis=0)
        if np.abs(X[0, pinned, :2] - pole).max() > 1e-6:
            raise ConfigError("cloth_frame 'azimuth' needs the pinned vertices on one vertical axis (the flag's pole)")
        free = np.setdiff1d(np.arange(X.shape[1]), pinned)
        rho = float(np.sqrt(((X[:, free, :2] - pole) ** 2).sum(-1).mean()))
        return cls(pole, free, rho * float(np.sqrt(X.shape[1])))

    def angles(self, X: np.ndarray) -> np.ndarray:
        """Azimuth (rad) of frames X (..., V, 3): shape X.shape[:-2], unwrapped along the frames
        (the axis before the vertices) when there are several."""
        d = np.asarray(X, np.float64)[..., self.free, :2] - self.pole
        r = np.sqrt((d * d).sum(-1, keepdims=True))
        v = (r * d).sum(-2)
        phi = np.arctan2(v[..., 1], v[..., 0])
        return np.unwrap(phi, axis=-1) if phi.ndim else phi

    def rotate(self, X: np.ndarray, phi: np.ndarray) -> np.ndarray:
        """Points X (..., V, 3) m turned by ``phi`` (...,) rad about the pole axis (float32)."""
        axis = np.array([self.pole[0], self.pole[1], 0.0])
        phi = np.asarray(phi, np.float64)[..., None]  # one angle per frame, for all its vertices
        return (turn_vectors(np.asarray(X, np.float64) - axis, phi) + axis).astype(np.float32)

    def save_arrays(self) -> dict:
        return {"frame_pole": self.pole, "frame_free": self.free, "frame_scale": np.float64(self.scale)}

    @classmethod
    def from_arrays(cls, z) -> AzimuthFrame | None:
        """The frame saved by :meth:`save_arrays` in an npz archive ``z``; None when it holds none."""
        if "frame_scale" not in z:
            return None
        return cls(
            np.asarray(z["frame_pole"], np.float64), np.asarray(z["frame_free"], np.int64), float(z["frame_scale"])
        )


def turn_vectors(v, phi, xp=np):
    """Horizontal parts of 3-vectors v (..., 3) turned by ``phi`` (...,) rad about the vertical (z
    unchanged); NumPy or ``jax.numpy`` (``xp``)."""
    c, s = xp.cos(phi)[..., None], xp.sin(phi)[..., None]
    return xp.concatenate([c * v[..., :1] - s * v[..., 1:2], s * v[..., :1] + c * v[..., 1:2], v[..., 2:]], axis=-1)


def wind_in_frame(w, phi, xp=np):
    """The flag's network input w (..., 6) = [wind, its change per frame] (m/s) turned by ``-phi``
    into the flag's frame."""
    return xp.concatenate([turn_vectors(w[..., :3], -phi, xp), turn_vectors(w[..., 3:], -phi, xp)], axis=-1)
