"""Evolution strategies of `evosax <https://github.com/RobertTLange/evosax>`_ (CMA-ES, SNES, OpenAI-ES)
as engine strategies: a search distribution over a flat vector ``x (D,)`` float32, ``decode`` turning
samples ``(P, D)`` into the genomes the system evaluates (the fly: network weights as they are; the
skier: keyframe angles, rounded, clipped and mirrored).

Sign: the engine maximises, evosax minimises. ``tell`` hands evosax ``-fitness``; a crashed genome
(NaN/inf fitness) gets the worst value of the generation plus one (all three strategies only rank).

Determinism: generation ``g`` samples with ``ask_key = fold_in(base_key, 2 g)`` and updates with
``fold_in(base_key, 2 g + 1)``; ``ask`` is a pure function of the state, and ``tell`` re-draws the same
samples from the same key before updating, so the state needs no copy of the samples. The evosax
state (a pytree of arrays: mean, step size, covariance, optimiser moments, ...) is stored as one
float64 vector of its leaves (exact for the float32/int32 leaves), rebuilt from the pytree's
structure, so a checkpoint resumes bit-exactly (:mod:`animat.evolve.loop`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from animat.errors import CheckpointError, ConfigError

#: ``--strategy`` name -> what it is
ALGORITHMS = {
    "cma_es": "CMA-ES (Hansen 2016), full covariance, evosax defaults for its rates",
    "snes": "separable natural evolution strategy (Schaul et al. 2011), evosax defaults",
    "open_es": "OpenAI-ES (Salimans et al. 2017): antithetic samples, centred ranks, Adam on the mean, fixed sigma",
}
OPEN_ES_LR = 0.1  # Adam's learning rate of OpenAI-ES, in units of std_init (x per generation)


def _evosax_algorithm(name: str, size: int, dims: int, std_init: float):
    """``(algorithm, params)`` of evosax for ``name`` over vectors of ``dims``."""
    import optax
    from evosax.algorithms import CMA_ES, SNES, Open_ES

    template = jnp.zeros(dims, dtype=jnp.float32)
    if name == "cma_es":
        es = CMA_ES(size, template)
    elif name == "snes":
        es = SNES(size, template)
    elif name == "open_es":
        es = Open_ES(
            size, template, optimizer=optax.adam(OPEN_ES_LR * std_init), std_schedule=optax.constant_schedule(std_init)
        )
        return es, es.default_params
    else:
        raise ConfigError(f"unknown evolution strategy {name!r}; expected one of {list(ALGORITHMS)}")
    return es, es.default_params.replace(std_init=jnp.asarray(std_init, dtype=jnp.float32))


def minimised(fitness: np.ndarray) -> np.ndarray:
    """``(P,)`` float32 what evosax minimises for an engine fitness ``(P,)`` (maximised): ``-fitness``,
    a non-finite one replaced by the worst finite value plus one (0 when none is finite)."""
    f = -np.asarray(fitness, dtype=np.float64)
    ok = np.isfinite(f)
    worst = f[ok].max() + 1.0 if ok.any() else 0.0
    return np.where(ok, f, worst).astype(np.float32)


@dataclass(frozen=True)
class EvosaxState:
    """``es_state (N,)`` float64: the evosax state's leaves, flattened in pytree order; ``base_key (2,)``
    uint32: the run's key; ``generation``: generations told so far."""

    es_state: np.ndarray
    base_key: np.ndarray
    generation: int = 0


def _identity(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


@dataclass(frozen=True, eq=False)
class EvosaxES:
    """Evolution strategy ``algorithm`` (a key of :data:`ALGORITHMS`) with ``size`` samples per generation
    from a distribution over ``(D,)`` vectors started at ``mean (D,)`` with spread ``std_init`` (x units);
    ``decode(x (P, D) float32) -> genomes (P, ...)``: what the loop evaluates and keeps as best."""

    State: ClassVar[type] = EvosaxState

    algorithm: str
    size: int
    mean: np.ndarray
    std_init: float = 1.0
    decode: Callable[[np.ndarray], np.ndarray] = _identity

    def __post_init__(self):
        if self.algorithm not in ALGORITHMS:
            raise ConfigError(f"unknown evolution strategy {self.algorithm!r}; expected one of {list(ALGORITHMS)}")
        if self.algorithm == "open_es" and self.size % 2:
            raise ConfigError(f"open_es samples antithetic pairs: the population must be even, got {self.size}")
        if int(self.size) < 4:
            raise ConfigError(f"an evolution strategy needs a population >= 4, got {self.size}")
        if not float(self.std_init) > 0:
            raise ConfigError(f"std_init must be > 0, got {self.std_init}")

    @property
    def name(self) -> str:
        return self.algorithm

    @cached_property
    def _es(self):
        return _evosax_algorithm(self.algorithm, int(self.size), int(np.size(self.mean)), float(self.std_init))

    @cached_property
    def _layout(self):
        """``(treedef, [(shape, dtype)])`` of the evosax state."""
        es, params = self._es
        shapes = jax.eval_shape(es.init, jax.random.PRNGKey(0), jnp.asarray(self.mean, dtype=jnp.float32), params)
        leaves, treedef = jax.tree_util.tree_flatten(shapes)
        return treedef, [(tuple(leaf.shape), leaf.dtype) for leaf in leaves]

    def _pack(self, es_state) -> np.ndarray:
        leaves = jax.tree_util.tree_leaves(es_state)
        return np.concatenate([np.asarray(leaf, dtype=np.float64).reshape(-1) for leaf in leaves])

    def _unpack(self, flat: np.ndarray):
        treedef, layout = self._layout
        sizes = [int(np.prod(shape)) for shape, _ in layout]
        if flat.shape != (sum(sizes),):
            raise CheckpointError(f"{self.algorithm} state of {flat.shape} values, expected {sum(sizes)}")
        parts = np.split(flat, np.cumsum(sizes)[:-1])
        leaves = [jnp.asarray(p.reshape(shape).astype(dtype)) for p, (shape, dtype) in zip(parts, layout)]
        return jax.tree_util.tree_unflatten(treedef, leaves)

    def _keys(self, state: EvosaxState):
        base = jnp.asarray(state.base_key)
        return jax.random.fold_in(base, 2 * state.generation), jax.random.fold_in(base, 2 * state.generation + 1)

    def _sample(self, state: EvosaxState):
        es, params = self._es
        ask_key, _ = self._keys(state)
        return es.ask(ask_key, self._unpack(state.es_state), params)

    def init(self, key: Any) -> EvosaxState:
        """Generation 0 from a PRNG key (or an integer seed: ``PRNGKey(seed)``)."""
        key = jax.random.PRNGKey(key) if isinstance(key, int) else jnp.asarray(key)
        init_key, base_key = jax.random.split(key)
        es, params = self._es
        es_state = es.init(init_key, jnp.asarray(self.mean, dtype=jnp.float32), params)
        return EvosaxState(self._pack(es_state), np.asarray(base_key, dtype=np.uint32))

    def samples(self, state: EvosaxState) -> np.ndarray:
        """``x (P, D)`` float32: the vectors of the generation to evaluate next (before ``decode``)."""
        return np.asarray(self._sample(state)[0])

    def ask(self, state: EvosaxState) -> tuple[np.ndarray, EvosaxState]:
        return self.decode(self.samples(state)), state

    def tell(self, state: EvosaxState, fitness: np.ndarray) -> EvosaxState:
        es, params = self._es
        population, es_state = self._sample(state)
        _, tell_key = self._keys(state)
        es_state, _ = es.tell(tell_key, population, jnp.asarray(minimised(fitness)), es_state, params)
        return replace(state, es_state=self._pack(jax.block_until_ready(es_state)), generation=state.generation + 1)

    def distribution_mean(self, state: EvosaxState) -> np.ndarray:
        """``(D,)`` float32: the search distribution's current mean."""
        return np.asarray(self._unpack(state.es_state).mean)

    @staticmethod
    def upgrade(
        arrays: dict[str, np.ndarray], meta: dict[str, Any], where: str
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        raise CheckpointError(f"checkpoint {where!r} predates the engine's loop; evolution strategies have none such")
