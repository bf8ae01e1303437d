"""The slides' genetic algorithm over keyframe genes: small pure NumPy functions.

Every function takes a seeded ``np.random.Generator`` and returns new arrays (inputs are never
written), so a generation is a pure function of (genes, fitness, rng state): same seed, same run.
Unlike the original program, children go into a new array, so parents still in use are never
overwritten and the best ``elites`` are copied bit-identically into the next generation.

Defaults (all parameters): the best 5 pass unchanged; a child's first parent is one of the best 5
with probabilities 40/30/15/10/5 %, its second one of the remaining four with those probabilities
renormalised; crossover takes each of the 6 body groups whole from a random one of the two
parents; mutation replaces each joint value by a uniform random value in its range with
probability 2 %. Only the first half of a gene is bred; the second half is its mirror image.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from animat.skier.gene import mirror
from animat.skier.model import groups as body_groups
from animat.skier.model import joint_ranges_deg

PARENT_PROBS = (0.40, 0.30, 0.15, 0.10, 0.05)


@dataclass(frozen=True)
class GAParams:
    elites: int = 5
    parent_probs: tuple[float, ...] = PARENT_PROBS
    mutation_rate: float = 0.02


def rank(fitness: np.ndarray) -> np.ndarray:
    """Indices from best to worst (stable: ties keep index order; NaN counts as worst)."""
    f = np.nan_to_num(np.asarray(fitness, dtype=np.float64), nan=-np.inf)
    return np.argsort(-f, kind="stable")


def choose_parents(rng: np.random.Generator, k: int, probs=PARENT_PROBS) -> np.ndarray:
    """(k, 2) ranks (0 = best) of two distinct parents per child: the first with ``probs``, the
    second with ``probs`` over the ranks left, renormalised."""
    p = np.asarray(probs, dtype=np.float64)
    p = p / p.sum()
    first = rng.choice(p.size, size=k, p=p)
    rest = np.tile(p, (k, 1))
    rest[np.arange(k), first] = 0.0
    cdf = np.cumsum(rest / rest.sum(axis=1, keepdims=True), axis=1)
    u = rng.random(k)
    second = np.minimum((cdf < u[:, None]).sum(axis=1), p.size - 1)
    second = np.where(second == first, (second + 1) % p.size, second)  # only reachable through rounding at u ~ 1
    return np.stack([first, second], axis=1)


def crossover(rng: np.random.Generator, a: np.ndarray, b: np.ndarray, groups=None) -> tuple[np.ndarray, np.ndarray]:
    """Children of parents ``a``, ``b`` (k, n, m): each body group's columns (all states) come whole
    from ``a`` or ``b`` with equal chance. Returns (children, from_b (k, n_groups) bool)."""
    groups = list((groups or body_groups(a.shape[-1])).values())
    k = a.shape[0]
    from_b = rng.random((k, len(groups))) < 0.5
    col_from_b = np.zeros((k, a.shape[-1]), dtype=bool)
    for g, cols in enumerate(groups):
        col_from_b[:, list(cols)] = from_b[:, g : g + 1]
    children = np.where(col_from_b[:, None, :], b, a)
    return children, from_b


def mutate(rng: np.random.Generator, genes: np.ndarray, rate: float = 0.02, ranges: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each value becomes a uniform random integer in its joint's range [low, high] with
    probability ``rate``. genes (..., m); ranges (m, 2). Returns (mutated copy, mask)."""
    r = joint_ranges_deg(np.shape(genes)[-1]) if ranges is None else np.asarray(ranges)
    genes = np.asarray(genes)
    mask = rng.random(genes.shape) < rate
    fresh = rng.integers(r[:, 0], r[:, 1] + 1, size=genes.shape)
    return np.where(mask, fresh, genes), mask


def next_generation(rng: np.random.Generator, genes: np.ndarray, fitness: np.ndarray, params: GAParams = GAParams()) -> np.ndarray:
    """The next population (P, n, m) from ``genes`` (P, n, m) and their ``fitness`` (P,): rows
    ``0..elites-1`` are the best genes unchanged (best first), the rest children."""
    genes = np.asarray(genes)
    P, n, _ = genes.shape
    e = int(params.elites)
    if len(params.parent_probs) != e:
        raise ValueError(f"parent_probs has {len(params.parent_probs)} entries, expected one per elite ({e})")
    order = rank(fitness)
    best = genes[order[:e]]
    k = P - e
    out = np.empty_like(genes)
    out[:e] = best
    if k > 0:
        parents = choose_parents(rng, k, params.parent_probs)
        children, _ = crossover(rng, best[parents[:, 0]], best[parents[:, 1]])
        half, _ = mutate(rng, children[:, : n // 2, :], params.mutation_rate)
        children[:, : n // 2, :] = half
        out[e:] = mirror(children)
    return out
