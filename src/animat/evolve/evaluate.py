"""Fitness evaluation backends. An evaluator maps genes ``(P, G)`` to fitness ``(P,)`` (NaN = crashed).

Two fitness styles (the engine's contract):
- per-genome: ``fitness(list[Genome]) -> sequence of floats`` (simple to write);
- batched: ``fitness(params) -> array (P,)`` where ``params`` is the stacked parameter tree
  ``{"W1": (P, n1, n0), ...}`` (fast path: jit/vmap inside).
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from animat.evolve import network
from animat.evolve.genome import Genome


def evaluate_genes(fitness: Callable, genes: np.ndarray, layers: Sequence[int], activations: Sequence[str], batched: bool) -> np.ndarray:
    """Evaluate ``genes (P, G)`` with either fitness style; returns float64 ``(P,)``."""
    genes = np.asarray(genes, dtype=np.float32)
    if batched:
        values = fitness(network.unflatten(genes, layers))
    else:
        values = fitness([Genome(tuple(layers), g, tuple(activations)) for g in genes])
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.shape[0] != genes.shape[0]:
        raise ValueError(f"fitness returned {values.shape[0]} values for {genes.shape[0]} genomes")
    return values


class LocalEvaluator:
    """Evaluate the whole population in this process (jit/vmap inside a batched fitness)."""

    def __init__(self, fitness: Callable, layers: Sequence[int], activations: Sequence[str], batched: bool):
        self.fitness, self.layers, self.activations, self.batched = fitness, tuple(layers), tuple(activations), batched

    def __call__(self, genes: np.ndarray) -> np.ndarray:
        return evaluate_genes(self.fitness, genes, self.layers, self.activations, self.batched)

    def close(self) -> None:
        pass
