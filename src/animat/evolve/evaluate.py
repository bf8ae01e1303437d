"""Fitness evaluation backends. An evaluator maps genes ``(P, G)`` to fitness ``(P,)`` (NaN = crashed).

Two fitness styles (the engine's contract):
- per-genome: ``fitness(list[Genome]) -> sequence of floats`` (simple to write);
- batched: ``fitness(params) -> array (P,)`` where ``params`` is the stacked parameter tree
  ``{"W1": (P, n1, n0), ...}`` (fast path: jit/vmap inside).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from animat.errors import ConfigError
from animat.evolve import network
from animat.evolve.genome import Genome
from animat.parallel import BACKENDS, RayPool


def evaluate_genes(
    fitness: Callable, genes: np.ndarray, layers: Sequence[int], activations: Sequence[str], batched: bool
) -> np.ndarray:
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


def _evaluate_chunk(
    genes: np.ndarray, fitness: Callable, layers: tuple, activations: tuple, batched: bool
) -> np.ndarray:
    """Ray task body: one contiguous chunk of the population (a pure function of its inputs)."""
    return evaluate_genes(fitness, genes, layers, activations, batched)


class RayEvaluator:
    """Evaluate a generation on Ray workers (optional extra: ``pip install 'animat[distributed]'``), the
    population split into contiguous chunks by :meth:`animat.parallel.RayPool.map_chunks`.

    Each chunk is one task running :func:`evaluate_genes`; results are gathered by chunk index (never
    completion order) and concatenated, so the output equals :class:`LocalEvaluator`'s for a per-genome
    fitness, and for a batched one up to XLA's batch-size dependent rounding. A task whose worker dies
    is retried up to ``max_retries`` times; since the fitness is a pure function of the chunk, a retry
    gives the same values. A chunk that still fails raises ``RuntimeError`` (no partial results); an
    exception raised by the fitness itself is not retried and propagates as Ray's ``RayTaskError``.

    ``address``, ``num_workers``, ``chunks``, ``max_retries``: as in :class:`animat.parallel.RayPool`
    (a local Ray of ``num_workers`` CPUs, else joining ``address``). ``close()`` shuts Ray down only if
    this evaluator started it.
    """

    def __init__(
        self,
        fitness: Callable,
        layers: Sequence[int],
        activations: Sequence[str],
        batched: bool,
        *,
        address: str | None = None,
        num_workers: int | None = None,
        chunks: int | None = None,
        max_retries: int = 3,
    ):
        self.layers, self.activations, self.batched = tuple(layers), tuple(activations), bool(batched)
        self._pool = RayPool(address=address, workers=num_workers, chunks=chunks, max_retries=max_retries)
        self.chunks = self._pool.chunks
        self._fitness_ref = self._pool.put(fitness)  # shipped to the object store once, not per task

    def __call__(self, genes: np.ndarray) -> np.ndarray:
        if self._fitness_ref is None:
            raise RuntimeError("this RayEvaluator is closed; make a new one")
        genes = np.asarray(genes, dtype=np.float32)
        parts = self._pool.map_chunks(
            _evaluate_chunk, genes, self._fitness_ref, self.layers, self.activations, self.batched, what="genomes"
        )
        return np.concatenate(parts).astype(np.float64, copy=False) if parts else np.zeros(0, dtype=np.float64)

    def close(self) -> None:
        """Release the fitness from the object store; shut Ray down only if we started it."""
        self._fitness_ref = None
        self._pool.close()


def make_evaluator(
    fitness: Callable,
    layers: Sequence[int],
    activations: Sequence[str],
    batched: bool,
    backend: str = "local",
    address: str | None = None,
    num_workers: int | None = None,
):
    """``"local"`` -> :class:`LocalEvaluator`, ``"ray"`` -> :class:`RayEvaluator`."""
    if backend == "local":
        return LocalEvaluator(fitness, layers, activations, batched)
    if backend == "ray":
        return RayEvaluator(fitness, layers, activations, batched, address=address, num_workers=num_workers)
    raise ConfigError(f"unknown backend {backend!r}; expected one of {list(BACKENDS)}")
