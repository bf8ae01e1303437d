"""Flock-quality metrics (Olfati-Saber 2006, Sec. VIII), NumPy float64 on recorded states.

* relative connectivity ``C = rank(L) / (n - 1)`` of the proximity graph (edges ``||q_j - q_i|| < r``);
  computed as ``(n - components) / (n - 1)``, which equals it exactly (rank L = n - #components);
* cohesion radius ``max_i ||q_i - q_c||`` (q_c the centroid);
* normalised deviation energy ``E~ = sum_{(i,j) in E} (||q_j - q_i|| - d)^2 / ((|E| + 1) d^2)``
  (ordered pairs, as the paper's double sum);
* normalised velocity mismatch ``K~ = sum_i ||p_i - p_c||^2 / (2 n)``;
* minimum pairwise distance; the worst relative neighbour-distance error ``max |d_ij - d| / d``.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

__all__ = [
    "neighbour_pairs",
    "relative_connectivity",
    "laplacian_rank_connectivity",
    "flock_metrics",
    "metrics_series",
    "METRIC_NAMES",
]

METRIC_NAMES = [
    "connectivity",
    "components",
    "cohesion_radius",
    "deviation_energy",
    "velocity_mismatch",
    "min_distance",
    "max_neighbour_error",
    "edges",
]


def neighbour_pairs(q: np.ndarray, r: float) -> tuple[np.ndarray, np.ndarray]:
    """Unordered pairs (i < j) with ||q_i - q_j|| < r: (E, 2) indices and (E,) distances."""
    q = np.asarray(q, np.float64)
    pairs = cKDTree(q).query_pairs(r, output_type="ndarray")
    if pairs.size == 0:
        return np.zeros((0, 2), int), np.zeros(0)
    dist = np.linalg.norm(q[pairs[:, 0]] - q[pairs[:, 1]], axis=1)
    keep = dist < r
    return pairs[keep], dist[keep]


def relative_connectivity(q: np.ndarray, r: float) -> tuple[float, int]:
    """(C, number of connected components) of the proximity graph."""
    n = len(q)
    pairs, _ = neighbour_pairs(q, r)
    g = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
    k = connected_components(g, directed=False)[0]
    return (n - k) / (n - 1) if n > 1 else 1.0, int(k)


def laplacian_rank_connectivity(q: np.ndarray, r: float) -> float:
    """rank(L) / (n - 1) with L the graph Laplacian, by dense matrix rank (small n; a check)."""
    q = np.asarray(q, np.float64)
    dist = np.linalg.norm(q[:, None] - q[None], axis=-1)
    adj = ((dist < r) & ~np.eye(len(q), dtype=bool)).astype(float)
    lap = np.diag(adj.sum(1)) - adj
    return np.linalg.matrix_rank(lap) / (len(q) - 1)


def flock_metrics(q: np.ndarray, p: np.ndarray, d: float, r: float) -> dict[str, float]:
    q = np.asarray(q, np.float64)
    p = np.asarray(p, np.float64)
    n = len(q)
    pairs, dist = neighbour_pairs(q, r)
    conn, comps = relative_connectivity(q, r)
    e = 2 * len(pairs)  # ordered pairs
    dev = 2.0 * np.sum((dist - d) ** 2) / ((e + 1) * d * d)
    vel = np.sum((p - p.mean(0)) ** 2) / (2.0 * n)
    nn = cKDTree(q).query(q, k=2)[0][:, 1] if n > 1 else np.array([np.inf])
    return {
        "connectivity": float(conn),
        "components": comps,
        "cohesion_radius": float(np.max(np.linalg.norm(q - q.mean(0), axis=1))),
        "deviation_energy": float(dev),
        "velocity_mismatch": float(vel),
        "min_distance": float(nn.min()),
        "max_neighbour_error": float(np.max(np.abs(dist - d)) / d) if len(dist) else float("nan"),
        "edges": int(len(pairs)),
    }


def metrics_series(positions: np.ndarray, velocities: np.ndarray, t: np.ndarray, d: float, r: float) -> list[dict]:
    """One metrics row (with ``step`` index and ``t``) per recorded frame."""
    return [{"frame": i, "t": float(t[i]), **flock_metrics(positions[i], velocities[i], d, r)} for i in range(len(t))]
