"""Genetic operators as tiny pure JAX functions: keys in, arrays out, jittable (evosax ``simple_ga`` style).

``genes`` are ``(P, G)`` float32, one flat network per row; ``fitness`` is ``(P,)`` and maximised.
A non-finite fitness (NaN, +-inf) marks a crashed individual: it ranks after every finite one.

One generation (:func:`next_generation`)::

    order   = ranking(fitness)                      # best first, crashes last, ties by index
    elites  = genes[order[:n_elite]]                # copied unchanged into the first rows
    pool    = order[:n_pool]                        # mating pool: the top pool_frac
    child_i = mutate(crossover(parent_a, parent_b))  # parents drawn uniformly from the pool

Mutation touches each gene with probability ``mutation_rate`` only (the original project replaced
~90% of the genes every generation, which is close to random search).
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp

from animat.config import require
from animat.evolve.options import MUTATIONS


def _check_frac(name: str, frac: float) -> float:
    return float(require(name, frac, ge=0, le=1))


def _ceil(x: float) -> int:
    return int(math.ceil(x - 1e-9))  # 0.07 * 100 = 7.000000000000001 must give 7


def elite_count(size: int, elite_frac: float) -> int:
    """Number of elites: ``ceil(elite_frac * size)``, at least 1 when ``elite_frac > 0``, at most ``size``."""
    elite_frac = _check_frac("elite_frac", elite_frac)
    if elite_frac == 0.0:
        return 0
    return min(size, max(1, _ceil(elite_frac * size)))


def pool_count(size: int, pool_frac: float) -> int:
    """Mating-pool size: ``ceil(pool_frac * size)``, at least 2 (or ``size`` if smaller), at most ``size``."""
    pool_frac = _check_frac("pool_frac", pool_frac)
    return min(size, max(2, _ceil(pool_frac * size)))


def ranking(fitness: jax.Array) -> jax.Array:
    """Indices ``(P,)`` ordering the population best first; non-finite fitness last; ties by index."""
    score = jnp.where(jnp.isfinite(fitness), fitness, -jnp.inf)
    return jnp.argsort(-score, stable=True)


def mating_pool(fitness: jax.Array, frac: float) -> jax.Array:
    """Indices of the top ``ceil(frac * P)`` individuals (at least 2), best first. ``frac`` is static."""
    return ranking(fitness)[: pool_count(fitness.shape[0], frac)]


def crossover(key: jax.Array, p1: jax.Array, p2: jax.Array, prob: float = 0.5) -> jax.Array:
    """Uniform crossover of two genomes ``(G,)``: each gene from ``p1`` with probability ``prob``, else ``p2``."""
    take_p1 = jax.random.uniform(key, p1.shape) < prob
    return jnp.where(take_p1, p1, p2)


def mutate(key: jax.Array, genes: jax.Array, rate: float, mode: str = "normal", std: float = 1.0) -> jax.Array:
    """Mutate each gene of ``genes (G,)`` with probability ``rate``.

    ``mode="normal"`` redraws a mutated gene from N(0, std^2); ``"additive"`` adds N(0, std^2) to it.
    """
    require("mutation", mode, choices=MUTATIONS)
    k_mask, k_noise = jax.random.split(key)
    hit = jax.random.uniform(k_mask, genes.shape) < rate
    noise = std * jax.random.normal(k_noise, genes.shape, dtype=genes.dtype)
    new = noise if mode == "normal" else genes + noise
    return jnp.where(hit, new, genes)


@partial(jax.jit, static_argnames=("pool_frac", "elite_frac", "mutation"))
def next_generation(
    key: jax.Array,
    genes: jax.Array,
    fitness: jax.Array,
    *,
    pool_frac: float = 0.1,
    elite_frac: float = 0.05,
    crossover_prob: float = 0.5,
    mutation_rate: float = 0.05,
    mutation: str = "normal",
    mutation_std: float = 1.0,
) -> jax.Array:
    """Breed ``genes (P, G)`` with ``fitness (P,)`` into the next ``(P, G)`` generation.

    Rows ``[0, n_elite)`` are the best ``elite_frac`` individuals, bit-identical, best first; every
    other row is ``mutate(crossover(a, b))`` of parents ``a, b`` drawn uniformly with replacement
    from the top ``pool_frac``. Crashed individuals (non-finite fitness) are never elites or parents
    while any individual has not crashed: with fewer survivors than elites the remaining elite rows
    are children too, with fewer than the pool the parents come from the survivors (with none at all,
    the ranking's order stands). ``pool_frac``, ``elite_frac`` and ``mutation`` are static (changing
    them recompiles); the rates and the std are traced.
    """
    size = genes.shape[0]
    n_elite = elite_count(size, elite_frac)
    n_pool = pool_count(size, pool_frac)
    order = ranking(fitness)
    n_ok = jnp.sum(jnp.isfinite(fitness))
    elites = genes[order[:n_elite]]
    k_parents, k_cross, k_mut = jax.random.split(key, 3)

    def breed(k_parents, k_cross, k_mut, n):
        parents = order[
            jax.random.randint(k_parents, (n, 2), 0, jnp.where(n_ok > 0, jnp.minimum(n_pool, n_ok), n_pool))
        ]
        children = jax.vmap(crossover, in_axes=(0, 0, 0, None))(
            jax.random.split(k_cross, n), genes[parents[:, 0]], genes[parents[:, 1]], crossover_prob
        )
        return jax.vmap(lambda k, g: mutate(k, g, mutation_rate, mutation, mutation_std))(
            jax.random.split(k_mut, n), children
        )

    if n_elite:  # elite rows beyond the survivors: children from their own keys (the other rows' draws unchanged),

        def replace_crashed(elites):  # bred only in a generation that needs them
            spare = breed(*jax.random.split(jax.random.fold_in(key, 1), 3), n_elite)
            return jnp.where((jnp.arange(n_elite) < n_ok)[:, None], elites, spare)

        elites = jax.lax.cond((n_ok > 0) & (n_ok < n_elite), replace_crashed, lambda e: e, elites)
    if size == n_elite:
        return elites
    return jnp.concatenate([elites, breed(k_parents, k_cross, k_mut, size - n_elite)], axis=0)
