"""The one ranking of a population by fitness, in NumPy (no JAX): every strategy sorts with it.

Fitness is maximised; a non-finite fitness (NaN, +-inf) marks a crashed individual and ranks after
every finite one; ties keep index order. :func:`animat.evolve.operators.ranking` is the same rule
traced inside the paper GA's jitted breeding step.
"""

from __future__ import annotations

import numpy as np


def ranking(fitness: np.ndarray) -> np.ndarray:
    """Indices ``(P,)`` ordering ``fitness (P,)`` best first; non-finite last; ties by index."""
    fitness = np.asarray(fitness, dtype=np.float64)
    key = np.where(np.isfinite(fitness), fitness, -np.inf)
    return np.argsort(-key, kind="stable")


def rank_scores(fitness: np.ndarray) -> np.ndarray:
    """Exact float32 stand-in for float64 ``fitness``: ``-rank`` (best 0, ties by index), crashes (non-finite)
    ``-inf`` so that breeding knows them (:func:`~animat.evolve.operators.next_generation`).

    Breeding on these instead of the raw values keeps the ranking exact and the same on every backend.
    """
    fitness = np.asarray(fitness, dtype=np.float64)
    order = ranking(fitness)
    ranks = np.empty(len(order), dtype=np.float32)
    ranks[order] = np.arange(len(order), dtype=np.float32)
    return np.where(np.isfinite(fitness), -ranks, -np.inf).astype(np.float32)
