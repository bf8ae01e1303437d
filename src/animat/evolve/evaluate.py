"""Fitness evaluation backends. An evaluator maps genes ``(P, G)`` to fitness ``(P,)`` (NaN = crashed).

Two fitness styles (the engine's contract):
- per-genome: ``fitness(list[Genome]) -> sequence of floats`` (simple to write);
- batched: ``fitness(params) -> array (P,)`` where ``params`` is the stacked parameter tree
  ``{"W1": (P, n1, n0), ...}`` (fast path: jit/vmap inside).
"""

from __future__ import annotations

import os
from typing import Callable, Sequence

import numpy as np

from animat.errors import ConfigError
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


# --------------------------------------------------------------------------------------------
# Ray backend (optional extra: ``pip install 'animat[distributed]'``)
# --------------------------------------------------------------------------------------------

_RAY_MISSING = "--backend ray needs the 'distributed' extra: pip install 'animat[distributed]'"
BACKENDS = ("local", "ray")


def import_ray():
    """The ray module; ConfigError (how to install it) where the optional extra is missing."""
    try:
        import ray
    except ImportError as err:
        raise ConfigError(_RAY_MISSING) from err
    return ray


def _probe_address(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on an unreachable ``host:port`` (``ray.init`` itself retries for minutes).

    ``"auto"``/``"local"`` and addresses without a port are left to ``ray.init``.
    """
    import socket

    target = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as err:
        raise ConfigError(f"cannot reach Ray cluster at {address!r}: {err}") from None


def _evaluate_chunk(fitness: Callable, genes: np.ndarray, layers: tuple, activations: tuple, batched: bool) -> np.ndarray:
    """Ray task body: one contiguous chunk of the population (a pure function of its inputs)."""
    return evaluate_genes(fitness, genes, layers, activations, batched)


class RayEvaluator:
    """Evaluate a generation on Ray workers, the population split into contiguous chunks.

    Each chunk is one ``@ray.remote`` task running :func:`evaluate_genes`; results are gathered by
    chunk index (never completion order) and concatenated, so the output equals
    :class:`LocalEvaluator`'s for a per-genome fitness, and for a batched one up to XLA's batch-size
    dependent rounding. A task whose worker dies (process killed, node lost) is retried up to
    ``max_retries`` times; since the fitness is a pure function of the chunk, a retry gives the same
    values. A chunk that still fails raises ``RuntimeError`` (no partial results); an exception raised
    by the fitness itself is not retried and propagates as Ray's ``RayTaskError`` (also an instance of
    the original exception class).

    ``address``: ``None`` starts a local Ray instance (``num_cpus=num_workers`` if given), else
    ``ray.init(address=...)`` (``"auto"``, ``"host:port"``, ``"ray://host:10001"``). If Ray is already
    initialised in this process it is used as is and ``address`` is ignored. ``close()`` shuts Ray
    down only if this evaluator started it. ``chunks``: number of tasks per generation (default
    ``num_workers``, else the cluster's CPU count).
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
        self._start(fitness, _evaluate_chunk, address, num_workers, chunks, max_retries)

    def _start(self, payload, task: Callable, address: str | None, num_workers: int | None, chunks: int | None,
               max_retries: int) -> None:
        """Validate the Ray settings, start/connect Ray, put ``payload`` (the first argument of every
        ``task(payload, chunk, ...)``) in the object store and wrap ``task`` as a remote function."""
        for name, value in (("num_workers", num_workers), ("chunks", chunks)):
            if value is not None and int(value) < 1:
                raise ConfigError(f"{name} must be >= 1, got {value}")
        if int(max_retries) < 0:
            raise ConfigError(f"max_retries must be >= 0, got {max_retries}")
        ray = import_ray()
        self._ray = ray
        self.max_retries = int(max_retries)
        self._owns_ray = False
        if not ray.is_initialized():
            self._init_ray(address, num_workers)
        if chunks is None:
            chunks = num_workers or int(ray.cluster_resources().get("CPU", 1)) or 1
        self.chunks = int(chunks)
        self._fitness_ref = ray.put(payload)  # shipped to the object store once, not per task
        self._task = ray.remote(max_retries=self.max_retries, retry_exceptions=False)(task)

    def _init_ray(self, address: str | None, num_workers: int | None) -> None:
        ray = self._ray
        # JAX on a GPU node would preallocate 75% of device memory in every worker; Ray leaves
        # CUDA_VISIBLE_DEVICES alone for tasks that ask for no GPU, so keep workers from hogging it.
        env = {"XLA_PYTHON_CLIENT_PREALLOCATE": os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE", "false")}
        kwargs = dict(log_to_driver=False, runtime_env={"env_vars": env})
        try:
            if address is None:
                ray.init(num_cpus=num_workers, include_dashboard=False, **kwargs)
            else:
                _probe_address(address)
                ray.init(address=address, **kwargs)
        except ConfigError:
            raise
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as err:
            where = "a local Ray instance" if address is None else f"Ray cluster at {address!r}"
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise ConfigError(f"cannot start/connect to {where}: {first}") from None
        self._owns_ray = True

    # Hooks a subclass with another task body and result type overrides (animat.skier.distributed).
    def _submit(self, genes: np.ndarray):
        """Start the remote task for one chunk of genes; returns its object ref."""
        return self._task.remote(self._fitness_ref, np.asarray(genes, dtype=np.float32), self.layers, self.activations, self.batched)

    def _combine(self, parts: list) -> np.ndarray:
        """The generation's result from the chunks' results, in chunk order."""
        return np.concatenate(parts).astype(np.float64, copy=False)

    def _empty(self) -> np.ndarray:
        """The result for an empty population (no task is submitted)."""
        return np.zeros(0, dtype=np.float64)

    def __call__(self, genes: np.ndarray):
        ray = self._ray
        if self._fitness_ref is None:
            raise RuntimeError("this RayEvaluator is closed; make a new one")
        genes = np.asarray(genes)
        if genes.shape[0] == 0:
            return self._empty()
        bounds = np.linspace(0, genes.shape[0], min(self.chunks, genes.shape[0]) + 1).round().astype(int)
        spans = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        refs = [self._submit(genes[a:b]) for a, b in spans]
        out = []
        # On a failure the other chunks are left to finish and their results dropped: cancelling them
        # (ray.cancel) races with task retries in Ray 2.x and can abort the driver ("Tried to complete
        # task that was not pending"), as the evolve Ray tests showed.
        for (a, b), ref in zip(spans, refs):  # by chunk index, never completion order
            try:
                out.append(ray.get(ref))
            except ray.exceptions.RayTaskError:
                raise  # the fitness itself raised: not retried, propagate its error
            except ray.exceptions.RayError as err:
                raise RuntimeError(
                    f"Ray chunk of genomes [{a}, {b}) failed after {self.max_retries} retries: "
                    f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
                ) from err
        return self._combine(out)

    def close(self) -> None:
        """Release the fitness from the object store; shut Ray down only if we started it."""
        self._fitness_ref = None
        if self._owns_ray and self._ray.is_initialized():
            self._ray.shutdown()
        self._owns_ray = False


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
