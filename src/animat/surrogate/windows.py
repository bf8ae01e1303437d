"""Training and validation windows of the subspace trajectories.

A window is a row ``(episode, start)`` naming frames ``start .. start + window - 1`` of one
episode (never across an episode boundary). Training draws windows uniformly or weighted by
motion; best-epoch selection uses evenly spaced windows (deterministic, no random draw).

Motion of a window: the mean over its ``window - 1`` steps of ``|z_t - z_{t-1}|`` (Euclidean norm
over the components, m per frame). The PCA basis is orthonormal, so this is the norm of the change
of all vertex coordinates: sqrt(V) x the RMS vertex speed (V vertices), for any subspace size.

Motion weighting (``weighting`` = lambda in [0, 1]): window i is drawn with probability

    p_i = ((1 - lambda) + lambda * m_i / mean(m)) / N

(N windows, m their motion): lambda = 0 is the uniform draw, lambda = 1 draws windows in proportion
to their motion (cloth at rest never), and in between a window at rest keeps (1 - lambda) x the
uniform probability, so windows where the cloth comes to rest still teach damping.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from animat.config import require


def all_windows(lengths: Sequence[int], window: int) -> np.ndarray:
    """(N, 2) int64 rows (episode position in ``lengths``, start frame) of every full window."""
    rows = [(e, t) for e, T in enumerate(lengths) for t in range(0, T - window + 1)]
    return np.array(rows, np.int64).reshape(-1, 2)


def window_motion(Z: Sequence[np.ndarray], rows: np.ndarray, window: int) -> np.ndarray:
    """(N,) mean |z_t - z_{t-1}| (m per frame) over each window of ``rows`` (episode index into
    ``Z``, a list of (T, k) trajectories; start frame)."""
    sums = []  # per episode: cumulative step lengths, sums[e][t] = sum of |dz| over steps 1..t
    for z in Z:
        step = np.linalg.norm(np.diff(np.asarray(z, np.float64), axis=0), axis=1)
        sums.append(np.concatenate([[0.0], np.cumsum(step)]))
    e, t = rows[:, 0], rows[:, 1]
    total = np.array([sums[i][s + window - 1] - sums[i][s] for i, s in zip(e, t)])
    return (total / (window - 1)).astype(np.float64)


def motion_probabilities(motion: np.ndarray, weighting: float) -> np.ndarray:
    """(N,) draw probabilities of the module docstring's formula (they sum to 1)."""
    lam = float(require("motion_weighting", weighting, ge=0, le=1))
    mean = float(motion.mean())
    if lam == 0.0 or mean <= 0.0:
        return np.full(len(motion), 1.0 / len(motion))
    p = (1.0 - lam) + lam * motion / mean
    return p / p.sum()


class WindowSampler:
    """Draws batches of training windows: uniformly (``weighting`` 0: ``rng.integers``, the draw of
    earlier runs number for number) or with :func:`motion_probabilities` (inverse CDF)."""

    def __init__(self, rows: np.ndarray, motion: np.ndarray | None = None, weighting: float = 0.0):
        self.rows = rows
        self.weighting = float(weighting)
        self.cdf = None
        if self.weighting > 0.0:
            if motion is None or len(motion) != len(rows):
                raise ValueError("motion weighting needs one motion value per window")
            self.cdf = np.cumsum(motion_probabilities(motion, self.weighting))

    def draw(self, rng: np.random.Generator, batch: int) -> np.ndarray:
        """(batch, 2) rows drawn with replacement."""
        if self.cdf is None:
            return self.rows[rng.integers(0, len(self.rows), batch)]
        i = np.searchsorted(self.cdf, rng.random(batch) * self.cdf[-1], side="right")
        return self.rows[np.minimum(i, len(self.rows) - 1)]


def spaced_windows(lengths: Sequence[int], window: int, count: int) -> np.ndarray:
    """Up to ``count`` rows evenly spaced over all full windows (all of them when ``count`` is 0 or
    at least their number), in episode order."""
    rows = all_windows(lengths, window)
    if count <= 0 or count >= len(rows):
        return rows
    return rows[np.unique(np.linspace(0, len(rows) - 1, int(count)).round().astype(np.int64))]


def gather(Z: Sequence[np.ndarray], W: Sequence[np.ndarray], ids: Sequence[int], rows: np.ndarray, window: int):
    """Stacked windows (Zw (N, window, k), Ww (N, window, w)) of episodes ``ids`` (rows index into ids)."""
    Zw = np.stack([Z[ids[e]][t : t + window] for e, t in rows])
    Ww = np.stack([W[ids[e]][t : t + window] for e, t in rows])
    return Zw, Ww


def still_segments(Z: Sequence[np.ndarray], Y: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Pieces of the trajectories Z (list of (T, k)) over which the external state Y (list of (T, y))
    does not change: for every maximal run of frames a..b-1 with Y[t] == Y[t-1], the frames
    ``Z[a-1 : b]`` (the cloth moving freely after the external objects stopped)."""
    pieces = []
    for z, y in zip(Z, Y):
        same = np.concatenate([[False], np.all(np.diff(np.asarray(y), axis=0) == 0, axis=1)])
        edges = np.flatnonzero(np.diff(np.concatenate([[0], same.astype(np.int8), [0]])))
        for a, b in zip(edges[::2], edges[1::2]):
            pieces.append(z[a - 1 : b])
    return pieces
