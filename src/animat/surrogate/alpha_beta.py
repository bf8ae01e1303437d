"""The damped-velocity baseline of Subspace Neural Physics, per subspace component j:

    zbar_t[j] = alpha[j] * z_{t-1}[j] + beta[j] * (z_{t-1}[j] - z_{t-2}[j])

``alpha`` and ``beta`` are least-squares fits over all triples (z_{t-2}, z_{t-1}, z_t) taken
inside each episode (never across an episode boundary). The recurrence itself runs in
:func:`animat.surrogate.model.alpha_beta_rollout`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def fit_alpha_beta(
    episodes: Sequence[np.ndarray], ridge: float = 1e-9, unit_alpha: Sequence[int] = ()
) -> tuple[np.ndarray, np.ndarray]:
    """episodes: list of (T_i, k) subspace trajectories -> alpha (k,), beta (k,) float32.
    Components in ``unit_alpha`` keep ``alpha = 1`` (no pull toward 0: e.g. an azimuth, where no
    direction is preferred) and fit only ``beta``, on the velocities ``z_t - z_{t-1} ~ beta (z_{t-1} - z_{t-2})``."""
    A = None
    for Z in episodes:
        Z = np.asarray(Z, np.float64)
        if len(Z) < 3:
            continue
        p, v, y = Z[1:-1], Z[1:-1] - Z[:-2], Z[2:]
        terms = np.stack([(p * p).sum(0), (p * v).sum(0), (v * v).sum(0), (p * y).sum(0), (v * y).sum(0)])
        A = terms if A is None else A + terms
    if A is None:
        raise ValueError("alpha/beta fit needs at least one episode of 3 or more frames")
    spp, spv, svv, spy, svy = A
    scale = np.maximum(spp, 1.0) * ridge
    det = (spp + scale) * (svv + scale) - spv * spv
    alpha = ((svv + scale) * spy - spv * svy) / det
    beta = ((spp + scale) * svy - spv * spy) / det
    fixed = np.asarray(unit_alpha, np.int64)
    alpha[fixed] = 1.0
    beta[fixed] = (svy - spv)[fixed] / (svv + np.maximum(svv, 1.0) * ridge)[fixed]
    return alpha.astype(np.float32), beta.astype(np.float32)
