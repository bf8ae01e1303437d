"""Genetic operators: ranking, pool, elitism, crossover and mutation statistics."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from animat.errors import ConfigError
from animat.evolve import operators

P, G = 100, 803


def _binomial_ok(count, n, p, sigmas=5.0):
    sd = math.sqrt(n * p * (1 - p))
    return abs(count - n * p) <= sigmas * sd + 1


def _distinct_genes(size=P, genes=G, seed=0):
    """Every gene of every individual distinct and far from N(0,1) draws' exact values."""
    return jnp.asarray(np.random.default_rng(seed).normal(size=(size, genes)).astype(np.float32))


def test_ranking_best_first_nan_last_stable():
    f = jnp.array([1.0, jnp.nan, 3.0, 3.0, -jnp.inf, 2.0, jnp.inf, 1.0])
    order = np.asarray(operators.ranking(f))
    assert order.tolist() == [2, 3, 5, 0, 7, 1, 4, 6]
    assert np.asarray(jax.jit(operators.ranking)(f)).tolist() == order.tolist()


@pytest.mark.parametrize("frac,expected", [(0.1, 10), (0.07, 7), (0.001, 2), (1.0, 100), (0.155, 16)])
def test_mating_pool_size_and_members(frac, expected):
    f = jnp.asarray(np.random.default_rng(0).permutation(P).astype(np.float32))
    pool = np.asarray(operators.mating_pool(f, frac))
    assert pool.shape == (expected,)
    assert set(np.asarray(f)[pool].tolist()) == set(range(P - expected, P))


def test_counts_and_validation():
    assert operators.elite_count(100, 0.05) == 5
    assert operators.elite_count(100, 0.001) == 1
    assert operators.elite_count(100, 0.0) == 0
    assert operators.pool_count(3, 0.0) == 2
    with pytest.raises(ConfigError):
        operators.elite_count(100, 1.5)
    with pytest.raises(ConfigError):
        operators.pool_count(100, -0.1)
    with pytest.raises(ConfigError):
        operators.mutate(jax.random.PRNGKey(0), jnp.zeros(3), 0.1, mode="cauchy")


def test_elites_bit_identical_in_first_rows():
    genes = _distinct_genes() + 100.0  # far from the N(0, 1) redraws
    fitness = jnp.asarray(np.random.default_rng(1).normal(size=P))
    new = np.asarray(
        operators.next_generation(jax.random.PRNGKey(0), genes, fitness, elite_frac=0.05, mutation_rate=1.0)
    )
    assert new.shape == (P, G) and new.dtype == np.float32
    best5 = np.argsort(-np.asarray(fitness), kind="stable")[:5]
    np.testing.assert_array_equal(new[:5], np.asarray(genes)[best5])
    # with mutation_rate=1 and "normal" mutation every child gene is redrawn from N(0, 1)
    assert np.abs(new[5:]).max() < 10.0


def test_nan_individuals_never_elite_or_parent():
    genes = _distinct_genes(20, 50)
    fit = np.arange(20, dtype=np.float32)
    fit[15:] = np.nan  # the would-be best five crashed
    new = np.asarray(
        operators.next_generation(
            jax.random.PRNGKey(3), genes, jnp.asarray(fit), pool_frac=0.5, elite_frac=0.1, mutation_rate=0.0
        )
    )
    g = np.asarray(genes)
    np.testing.assert_array_equal(new[:2], g[[14, 13]])
    crashed = g[15:]
    assert not np.isin(new, crashed).any()


def test_with_fewer_survivors_than_elites_crashes_are_neither_elites_nor_parents():
    """Two of 30 survive, 3 elites and a pool of 3: the survivors are the first elites, the third elite row
    and every child are bred from the two survivors only (no mutation: each gene is one of theirs)."""
    genes = _distinct_genes(30, 40)
    fit = np.full(30, -np.inf, np.float32)
    fit[[7, 3]] = [-0.0, -1.0]  # rank scores: 7 best, 3 second, the rest crashed
    new = np.asarray(
        operators.next_generation(
            jax.random.PRNGKey(0), genes, jnp.asarray(fit), pool_frac=0.1, elite_frac=0.1, mutation_rate=0.0
        )
    )
    g = np.asarray(genes)
    np.testing.assert_array_equal(new[:2], g[[7, 3]])
    assert np.all((new[2:, None, :] == g[[7, 3]][None]).any(axis=1))
    # all crashed: the ranking's order stands (there is nothing better to breed from)
    none = np.asarray(
        operators.next_generation(jax.random.PRNGKey(0), genes, jnp.full(30, -jnp.inf), pool_frac=0.1, elite_frac=0.1)
    )
    np.testing.assert_array_equal(none[:3], g[:3])


def test_children_come_only_from_pool_without_mutation():
    genes = _distinct_genes()
    fitness = jnp.asarray(np.random.default_rng(2).normal(size=P))
    new = np.asarray(
        operators.next_generation(
            jax.random.PRNGKey(1), genes, fitness, pool_frac=0.1, elite_frac=0.05, mutation_rate=0.0
        )
    )
    g = np.asarray(genes)
    pool = np.argsort(-np.asarray(fitness), kind="stable")[:10]
    # every child gene j equals gene j of some pool member; none come from outside the pool
    for child in new[5:]:
        assert np.all((child[None, :] == g[pool]).any(axis=0))
    outside = np.setdiff1d(np.arange(P), pool)
    assert not (new[5:][:, None, :] == g[outside][None, :, :]).any()
    # and several distinct pool members are used as parents (uniform draw)
    used = set()
    for child in new[5:]:
        parents = np.nonzero((child[None, :] == g[pool]).any(axis=1))[0]
        assert 1 <= len(parents) <= 2  # uniform crossover of two parents (possibly the same one twice)
        used.update(parents.tolist())
    assert len(used) == 10


def test_population_size_constant():
    for size in (2, 17):
        genes = _distinct_genes(size, 11)
        new = operators.next_generation(jax.random.PRNGKey(0), genes, jnp.zeros(size), elite_frac=0.05)
        assert new.shape == (size, 11)
    all_elite = operators.next_generation(jax.random.PRNGKey(0), _distinct_genes(4, 3), jnp.arange(4.0), elite_frac=1.0)
    assert all_elite.shape == (4, 3)


@pytest.mark.parametrize("prob", [0.5, 0.2, 0.9])
def test_crossover_frequency(prob):
    n = 200_000
    p1, p2 = jnp.zeros(n), jnp.ones(n)
    child = np.asarray(operators.crossover(jax.random.PRNGKey(4), p1, p2, prob))
    assert set(np.unique(child).tolist()) <= {0.0, 1.0}
    assert _binomial_ok(int((child == 0).sum()), n, prob)


@pytest.mark.parametrize("rate", [0.05, 0.01, 0.3])
def test_mutation_frequency_normal(rate):
    n = 200_000
    genes = jnp.full(n, 7.0, dtype=jnp.float32)
    out = np.asarray(operators.mutate(jax.random.PRNGKey(5), genes, rate, "normal", 2.0))
    hit = out != 7.0
    assert _binomial_ok(int(hit.sum()), n, rate)
    vals = out[hit]
    # redrawn from N(0, 2^2): centred on 0, not on the old value
    assert abs(vals.mean()) < 5 * 2.0 / math.sqrt(vals.size)
    assert abs(vals.std() - 2.0) < 0.05 * 2.0


def test_mutation_additive_statistics():
    n, rate, std = 200_000, 0.1, 0.5
    genes = jnp.full(n, 7.0, dtype=jnp.float32)
    out = np.asarray(operators.mutate(jax.random.PRNGKey(6), genes, rate, "additive", std))
    hit = out != 7.0
    assert _binomial_ok(int(hit.sum()), n, rate)
    delta = out[hit] - 7.0
    assert abs(delta.mean()) < 5 * std / math.sqrt(delta.size)
    assert abs(delta.std() - std) < 0.05 * std


def test_next_generation_touches_only_rate_fraction():
    """Children differ from their crossover parents in ~rate of genes, not ~90% as in the original."""
    rate = 0.05
    genes = jnp.zeros((P, G), dtype=jnp.float32)  # all parents identical: any nonzero gene is a mutation
    new = np.asarray(
        operators.next_generation(jax.random.PRNGKey(7), genes, jnp.arange(P, dtype=jnp.float32), mutation_rate=rate)
    )
    n_child = P - 5
    changed = int((new[5:] != 0).sum())
    assert _binomial_ok(changed, n_child * G, rate)
    assert changed / (n_child * G) < 0.1


def test_next_generation_deterministic_and_key_dependent():
    genes = _distinct_genes()
    fit = jnp.asarray(np.random.default_rng(3).normal(size=P))
    a = operators.next_generation(jax.random.PRNGKey(0), genes, fit)
    b = operators.next_generation(jax.random.PRNGKey(0), genes, fit)
    c = operators.next_generation(jax.random.PRNGKey(1), genes, fit)
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert not np.array_equal(np.asarray(a), np.asarray(c))


def test_crossover_prob_and_mutation_settings_reach_the_children():
    """Through next_generation: crossover_prob 1 copies the first parent whole; rate-1 'additive' mutation
    adds N(0, std^2) to it; rate-1 'normal' mutation redraws every gene from N(0, std^2)."""
    genes = _distinct_genes()
    fitness = jnp.asarray(np.random.default_rng(5).normal(size=P))
    g = np.asarray(genes)
    pool = g[np.argsort(-np.asarray(fitness), kind="stable")[:10]]
    kw = dict(pool_frac=0.1, elite_frac=0.05, crossover_prob=1.0)
    copies = np.asarray(operators.next_generation(jax.random.PRNGKey(4), genes, fitness, mutation_rate=0.0, **kw))[5:]
    assert all((child[None] == pool).all(axis=1).any() for child in copies)
    added = np.asarray(
        operators.next_generation(
            jax.random.PRNGKey(4), genes, fitness, mutation_rate=1.0, mutation="additive", mutation_std=0.01, **kw
        )
    )[5:]
    assert np.std(added - copies) == pytest.approx(0.01, rel=0.1)  # same key: the same parents as the copies
    drawn = np.asarray(
        operators.next_generation(
            jax.random.PRNGKey(4), genes, fitness, mutation_rate=1.0, mutation="normal", mutation_std=3.0, **kw
        )
    )[5:]
    assert np.std(drawn) == pytest.approx(3.0, rel=0.1) and abs(np.corrcoef(drawn.ravel(), copies.ravel())[0, 1]) < 0.1
